// Server-sent events read from a response body (text/event-stream: blocks of `field: value`
// lines, a blank line after each). The CLI and the notebook gateway follow GET /api/apps/events
// with it; a small reader of our own, because the format is a few lines and Node 20 has no
// EventSource.
export interface ServerEvent { event: string; data: string; id?: string }

export async function* serverEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event: ServerEvent = { event: 'message', data: '' };
      let fields = 0;
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue; // comments (keep-alives) and blank lines
        const field = line.slice(0, colon);
        const value = line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event.event = value;
        else if (field === 'data') event.data += value;
        else if (field === 'id') event.id = value;
        else continue;
        fields += 1;
      }
      if (fields > 0) yield event; // a block of comments only is no event
    }
  }
}
