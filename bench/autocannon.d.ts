// The part of autocannon's API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  namespace autocannon {
    interface Options { url: string; method?: string; headers?: Record<string, string>; body?: string; connections?: number; duration?: number }
    interface Result { '2xx': number; non2xx: number; errors: number; timeouts: number; requests: { average: number } }
  }
  function autocannon(options: autocannon.Options, done: (error: Error | null, result: autocannon.Result) => void): EventEmitter;
  export default autocannon;
}
