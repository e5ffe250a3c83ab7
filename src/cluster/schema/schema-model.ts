// The shape of one generated schema model (schemas.generated.ts), in its own module so the generated table
// and its runtime accessors (schema.ts) do not import each other.

/**
 * One model as generated: description, fields ([type] or [type, description]) and, for a model of a kind's own
 * schema (no client-node model, no Go struct), its OpenAPI component name.
 */
export interface GeneratedModel {
  d: string;
  f: Record<string, [string] | [string, string]>;
  n?: string;
}
