import { main } from './main.ts';

/** Process entry: real stdio, and an exit code once output has drained. */
const exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
  ownProcess: true,
});
process.exitCode = exitCode;
