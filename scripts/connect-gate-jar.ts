// Prints the path of the service's Spark Connect gate packed as a jar (cluster/local/connect-gate.ts),
// compiled on this machine against Spark VERSION's Connect server jar SERVER_JAR and kept in the
// service's cache: images/build.sh bakes it into that version's runtime image, whose JRE has no
// compiler. Run from the repository's root: node --import tsx scripts/connect-gate-jar.ts SERVER_JAR VERSION
import { existsSync } from 'node:fs';
import { buildConnectGate } from '../cluster/local/connect-gate.js';

const [serverJar, version] = process.argv.slice(2);
if (!serverJar || !version || !existsSync(serverJar)) {
  process.stderr.write('usage: connect-gate-jar.ts SERVER_JAR VERSION (SERVER_JAR: spark-connect_2.12-VERSION.jar, which must exist)\n');
  process.exit(64);
}
process.stdout.write(`${await buildConnectGate(serverJar, version)}\n`);
