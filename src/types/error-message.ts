// Turning anything thrown into text for logs, events and Status messages (never to branch on: errors are typed).

/** The message of anything thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
