import { request } from 'node:http';

export interface Answer {
  status: number;
  body: string;
}

/**
 * Sends the headers and `start` of a body announced as `announced` bytes ('chunked': no length),
 * then nothing more: an answer can only come from a server that decided without reading the body
 * whole (let alone parsing it). No answer within 5 s fails.
 */
export function sendUnfinishedBody(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  start: string,
  announced: number | 'chunked' = 1024 * 1024,
): Promise<Answer> {
  const length = announced === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(announced) };
  return new Promise((resolve, reject) => {
    const req = request({ port, method, path, headers: { 'content-type': 'application/json', ...length, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
        req.destroy();
      });
    });
    req.setTimeout(5000, () => req.destroy(new Error(`${method} ${path}: no answer within 5 s while the body was still coming`)));
    req.on('error', reject);
    req.write(start);
  });
}
