import type { SystemDef } from '../common.ts';
import { leaseholdSystems } from './leasehold.ts';
import { peerSystems } from './peers.ts';
import { rawSystems } from './raw.ts';

export const allSystems: SystemDef[] = [...leaseholdSystems, ...peerSystems, ...rawSystems];

export function findSystem(id: string): SystemDef {
  const s = allSystems.find((x) => x.id === id);
  if (!s) throw new Error(`unknown system ${id}; known: ${allSystems.map((x) => x.id).join(', ')}`);
  return s;
}
