// The shape of one generated schema model (schemas.generated.ts), in its own module so the generated table
// and its runtime accessors (schema.ts) do not import each other.

/** One model as generated: description and fields ([type] or [type, description]). */
export interface GeneratedModel {
  d: string;
  f: Record<string, [string] | [string, string]>;
}
