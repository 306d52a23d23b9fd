// What a local driver runs: a driver's spark-submit line cut into its parts
// (spark-command.ts), and the process made of them, as spark-submit or Python first
// (python-first.ts).

/** A process to start: the program, its arguments and what its environment adds. */
export interface LocalCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** A driver's spark-submit line, cut where spark-submit cuts it. */
export interface SubmitParts {
  /** spark-submit's own options, ours (master local[N], free ports, UI port) included. */
  options: string[];
  /** The primary resource (a local path), undefined when the arguments hold none. */
  primary: string | undefined;
  /** The application's own arguments, as written. */
  appArgs: string[];
  env: Record<string, string>;
}
