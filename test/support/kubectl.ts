// Whether the real kubectl is installed: tests that drive it skip, saying so, without it.
import { execFileSync } from 'node:child_process';

/** True when `kubectl version --client` runs. */
export function kubectlInstalled(): boolean {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
