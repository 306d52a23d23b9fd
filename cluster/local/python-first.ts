// Python first, as Spark's own `bin/pyspark` starts: the driver's Python runs the main file
// itself and pyspark starts the JVM (spark-submit with the primary resource `pyspark-shell`)
// when the program first builds a SparkContext. A notebook kernel then answers in the time
// Python takes to import ipykernel, while the JVM starts beside it, instead of after
// spark-submit → JVM → Python (gateway/README.md has the figures).
import type { LocalCommand, SubmitParts } from './local-command.js';

/** pyspark reads PYSPARK_SUBMIT_ARGS with shlex.split: POSIX single quotes survive it for any text. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** `python MAIN ARGS` with spark-submit's options in PYSPARK_SUBMIT_ARGS, ending in `pyspark-shell`. */
export function pythonFirstCommand(parts: SubmitParts & { primary: string }, python: string): LocalCommand {
  const submitArgs = [...parts.options, 'pyspark-shell'].map(shellQuote).join(' ');
  return {
    command: python,
    args: [parts.primary, ...parts.appArgs],
    // spark-submit's Python runner sets PYTHONUNBUFFERED too: the log shows output as it happens.
    env: { ...parts.env, PYSPARK_SUBMIT_ARGS: submitArgs, PYTHONUNBUFFERED: 'YES' },
  };
}
