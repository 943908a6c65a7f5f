import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indentJsonText } from './json-text.js';

test('indentJsonText indents without changing a token: numbers, escapes and key order stay as sent', () => {
  const sent = '{"b":1.0,"1":"x","s":"a, \\"b\\": {c}","q":"say \\" hi, [x","e":{},"l":[],"n":[1,{"k":null}]}';
  const shown = indentJsonText(sent);
  assert.equal(shown, '{\n  "b": 1.0,\n  "1": "x",\n  "s": "a, \\"b\\": {c}",\n  "q": "say \\" hi, [x",\n  "e": {},\n  "l": [],\n  "n": [\n    1,\n    {\n      "k": null\n    }\n  ]\n}');
  assert.deepEqual(JSON.parse(shown), JSON.parse(sent));
  assert.equal(indentJsonText(' { "a" : [ ] } '), '{\n  "a": []\n}');
});
