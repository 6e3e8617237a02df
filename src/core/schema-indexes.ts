/**
 * The secondary indexes a migration history creates, read from its DDL, so the list doctor
 * checks against is the migrations themselves and no index name is written twice. Understands
 * `CREATE [UNIQUE] INDEX name ON table …`, `[UNIQUE] KEY|INDEX name (…)` inside a CREATE TABLE,
 * `ALTER TABLE t ADD [UNIQUE] KEY|INDEX name (…)`, and the DROP INDEX forms that undo them.
 * Primary keys and unnamed constraints are the tables' own and are not listed.
 */

export interface DeclaredIndex {
  /** the table it belongs to */
  table: string;
  /** its name */
  name: string;
  /** one statement that creates it on its own */
  definition: string;
}

/** `"schema".jobs` → `jobs`: the last part of a possibly qualified, possibly quoted name. */
function bare(name: string): string {
  const last = name.split('.').pop() ?? name;
  return last.replace(/^[`"]|[`"]$/g, '');
}

const CREATE_INDEX = /^CREATE\s+(UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?([\w."`]+)\s+ON\s+(?:ONLY\s+)?([\w."`]+)/i;
const CREATE_TABLE = /^CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w."`]+)\s*\(/i;
// upper case only, as our DDL writes keywords: a column named `key` is not a KEY clause
const INLINE_KEY = /^\s*(UNIQUE\s+)?(?:KEY|INDEX)\s+([\w`"]+)\s*(\([^)]*\))/gm;
const ALTER_ADD = /^ALTER\s+TABLE\s+([\w."`]+)\s+ADD\s+(UNIQUE\s+)?(?:KEY|INDEX)\s+([\w`"]+)\s*(\([^)]*\))/i;
const DROP_INDEX = /^DROP\s+INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+EXISTS\s+)?([\w."`]+)/i;
const ALTER_DROP = /^ALTER\s+TABLE\s+[\w."`]+\s+DROP\s+(?:KEY|INDEX)\s+([\w`"]+)/i;

/** Statements of a script, `--` comments removed (none of our DDL holds `--` or `;` in a literal). */
function statements(script: string): string[] {
  return script
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The indexes the scripts leave behind, in the order they are created. */
export function declaredIndexes(scripts: readonly string[]): DeclaredIndex[] {
  const found = new Map<string, DeclaredIndex>();
  for (const stmt of scripts.flatMap(statements)) {
    const oneLine = stmt.replace(/\s+/g, ' ');
    let m: RegExpExecArray | null;
    if ((m = CREATE_INDEX.exec(oneLine))) {
      found.set(bare(m[2]!), { table: bare(m[3]!), name: bare(m[2]!), definition: oneLine });
    } else if ((m = CREATE_TABLE.exec(stmt))) {
      const table = m[1]!;
      for (const k of stmt.matchAll(INLINE_KEY)) {
        const name = bare(k[2]!);
        found.set(name, { table: bare(table), name, definition: `ALTER TABLE ${table} ADD ${k[1] ? 'UNIQUE ' : ''}KEY ${k[2]!} ${k[3]!.replace(/\s+/g, ' ')}` });
      }
    } else if ((m = ALTER_ADD.exec(oneLine))) {
      found.set(bare(m[3]!), { table: bare(m[1]!), name: bare(m[3]!), definition: oneLine });
    } else if ((m = DROP_INDEX.exec(oneLine) ?? ALTER_DROP.exec(oneLine))) {
      found.delete(bare(m[1]!));
    }
  }
  return [...found.values()];
}
