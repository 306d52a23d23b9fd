// A pytest suite run from tap: a command's exit code and output, and the test cases of the JUnit
// XML report pytest writes (--junitxml), so each pytest test is reported as a subtest.
import { execFile } from 'node:child_process';

export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number; output: string }> {
  return new Promise((ok) => {
    execFile(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      ok({ code, output: `${stdout}${stderr}` });
    });
  });
}

export interface PytestCase { name: string; failure?: string; skipped?: string }

/** The test cases of a JUnit XML report (pytest --junitxml). */
export function junitCases(xml: string): PytestCase[] {
  const cases: PytestCase[] = [];
  const unescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = unescape(/\bname="([^"]*)"/.exec(m[1])?.[1] ?? '?');
    const body = m[3] ?? '';
    const failure = /<(failure|error)\b[^>]*?(?:message="([^"]*)")?[^>]*>([\s\S]*?)<\/\1>/.exec(body) ?? /<(failure|error)\b[^>]*?message="([^"]*)"[^>]*\/>/.exec(body);
    const skipped = /<skipped\b[^>]*?message="([^"]*)"/.exec(body);
    cases.push({ name, ...(failure ? { failure: unescape(`${failure[2] ?? ''}\n${failure[3] ?? ''}`) } : {}), ...(skipped ? { skipped: unescape(skipped[1]) } : {}) });
  }
  return cases;
}
