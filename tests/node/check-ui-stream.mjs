// Reads the answer of POST /docs/ask with the AI SDK's own UI message stream parser
// (`parseJsonEventStream` with `uiMessageChunkSchema`, then `readUIMessageStream`), the way a
// chat front end built on the SDK would. Prints {text, sources, types} as one JSON line;
// exits 1 on any parse or protocol error. Run by tests/api/docs.rs:
//   node tests/node/check-ui-stream.mjs URL QUESTION
import {
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from 'ai';

const [url, question] = process.argv.slice(2);
if (!url || !question) {
  console.error('usage: node check-ui-stream.mjs URL QUESTION');
  process.exit(2);
}

try {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question, visitor_id: 'node-ui-stream-check' }),
  });
  if (res.status !== 200) {
    throw new Error(`status ${res.status}: ${await res.text()}`);
  }
  const protocol = res.headers.get('x-vercel-ai-ui-message-stream');
  if (protocol !== 'v1') {
    throw new Error(`x-vercel-ai-ui-message-stream is ${protocol}, not v1`);
  }
  const types = [];
  const chunks = parseJsonEventStream({
    stream: res.body,
    schema: uiMessageChunkSchema,
  }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) {
          throw result.error;
        }
        types.push(result.value.type);
        controller.enqueue(result.value);
      },
    }),
  );
  let message;
  for await (const m of readUIMessageStream({
    stream: chunks,
    terminateOnError: true,
  })) {
    message = m;
  }
  if (!message) {
    throw new Error('the stream held no message');
  }
  const text = message.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');
  const sources = message.parts
    .filter((p) => p.type === 'source-url')
    .map(({ sourceId, url, title }) => ({ sourceId, url, title }));
  console.log(JSON.stringify({ text, sources, types }));
} catch (e) {
  console.error(`the AI SDK could not read the stream: ${e?.stack ?? e}`);
  process.exit(1);
}
