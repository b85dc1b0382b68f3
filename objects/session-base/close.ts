/** Closing a WebSocket session (pure). */

/**
 * The WebSocket close code to echo for a close the peer started: its own,
 * 1000 when its close frame carried none (1005); none when there is no
 * peer left to answer (1006 abnormal closure, 1015 TLS failure: writing a
 * close frame to a gone transport fails later, uncatchably).
 */
export function echoCloseCode(code: number): number | null {
  if (code === 1005) return 1000;
  if (code === 1006 || code === 1015) return null;
  return code;
}
