// Versioned static paths and the rewriting of a page's static links (dashboard/spark-ui-static.ts):
// which paths name a version, a link split across chunks, gzip pages, what is left alone.
import { Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import t from 'tap';
import { isRewritablePage, LinkRewriter, rewriteAnswerBody, staticLinkRewrite, versionedScript, versionedStaticPath } from '../../dashboard/spark-ui-static.js';

const PREFIX = '/dashboard/apps/pi-1a2b/spark-ui';
const rewrite = staticLinkRewrite(PREFIX, '4.2.0')!;
const page = `<link href="${PREFIX}/static/bootstrap.min.css"><script src="${PREFIX}/static/sql/spark-sql-viz.js"></script><a href="${PREFIX}/jobs/">`;
const expected = page.replaceAll(`${PREFIX}/static/`, `${PREFIX}/static/spark-4.2.0/`);

t.test('versionedStaticPath: a version and a plain static file, nothing else', async (t) => {
  t.same(versionedStaticPath('/static/spark-4.2.0/webui.js'), { version: '4.2.0', file: '/static/webui.js' });
  t.same(versionedStaticPath('/static/spark-3.5.7/sql/spark-sql-viz.css'), { version: '3.5.7', file: '/static/sql/spark-sql-viz.css' });
  for (const rest of ['/static/webui.js', '/static/spark-4.2/webui.js', '/static/spark-4.2.0/../webui.js', '/static/spark-4.2.0/%2e%2e/x.js', '/static/spark-4.2.0/', '/jobs/spark-4.2.0/x.js', '/static/spark-4.2.0-x/webui.js']) {
    t.equal(versionedStaticPath(rest), undefined, rest);
  }
  t.equal(staticLinkRewrite(PREFIX, '4.2.0"><script>'), undefined, 'a version that is no version writes no link');
});

t.test('a page\'s static links name the version, whole or gzip, other links left alone', async (t) => {
  t.equal(rewriteAnswerBody(Buffer.from(page), undefined, rewrite).toString(), expected);
  t.equal(gunzipSync(rewriteAnswerBody(gzipSync(page), 'gzip', rewrite)).toString(), expected, 'through its gzip');
  const bytes = Buffer.concat([Buffer.from('é '), Buffer.from(page), Buffer.from([0xff, 0xfe])]);
  t.same(rewriteAnswerBody(bytes, undefined, rewrite), Buffer.concat([Buffer.from('é '), Buffer.from(expected), Buffer.from([0xff, 0xfe])]), 'other bytes as they were');
});

t.test('streaming: a link split between chunks at every place is rewritten once', async (t) => {
  for (let cut = 1; cut < page.length; cut += 7) {
    const chunks = [page.slice(0, cut), page.slice(cut, cut + 5), page.slice(cut + 5)].filter((c) => c).map((c) => Buffer.from(c));
    const out: Buffer[] = [];
    for await (const chunk of Readable.from(chunks).pipe(new LinkRewriter(rewrite))) out.push(chunk as Buffer);
    t.equal(Buffer.concat(out).toString(), expected, `cut at ${cut}`);
  }
});

t.test('only a 200 of HTML is a page to rewrite', async (t) => {
  t.ok(isRewritablePage(200, { 'content-type': 'text/html;charset=utf-8' }));
  t.ok(isRewritablePage(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }));
  t.notOk(isRewritablePage(200, { 'content-type': 'text/html', 'content-encoding': 'br' }), 'a coding it cannot read');
  t.notOk(isRewritablePage(200, { 'content-type': 'application/json' }));
  t.notOk(isRewritablePage(302, { 'content-type': 'text/html' }));
});

t.test('a versioned script\'s template paths name its version (Spark builds them in the browser)', async (t) => {
  const script = `baseURI = words.slice(0, ind).join('/') + '/static/' + templateName + '-template.html';\nreturn uiRoot + "/static/" + templateName + "-template.html";\nvar other = "/static/d3.min.js is a comment";`;
  const out = versionedScript(Buffer.from(script), '4.2.0').toString();
  t.match(out, `'/static/spark-4.2.0/' + templateName`);
  t.match(out, `uiRoot + "/static/spark-4.2.0/" + templateName`);
  t.match(out, '"/static/d3.min.js is a comment"', 'other strings left alone');
  t.equal(versionedScript(Buffer.from(script), '4.2.0"x').toString(), script, 'a version that is no version changes nothing');
});
