// Plaza webhook portal: the only script besides htmx. Copies a shown secret or snippet to the
// clipboard. Event delegation on document, so that it keeps working after htmx swaps the page.
document.addEventListener('click', function (event) {
  var button = event.target.closest && event.target.closest('[data-copy]');
  if (!button) return;
  var source = document.getElementById(button.getAttribute('data-copy'));
  var status = document.getElementById(button.getAttribute('data-copy') + '-status');
  if (!source) return;
  var text = source.textContent.trim();
  var done = function (message) { if (status) status.textContent = message; };
  // The Clipboard API needs a secure context; over plain HTTP select the text for Ctrl+C instead.
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done('Copied.'); }, function () { done('Copy failed: select the text and copy it.'); });
  } else {
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    done('Selected: press Ctrl+C (or Cmd+C) to copy.');
  }
});
