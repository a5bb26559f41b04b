/**
 * A seccomp filter (classic BPF, as bubblewrap's `--seccomp FD` takes it) that refuses new user
 * namespaces: `unshare` and `clone` with CLONE_NEWUSER fail with EPERM, `clone3` (whose flags sit
 * in memory a filter cannot read) with ENOSYS so that libc falls back to `clone`, and syscalls of
 * another ABI (32-bit or x32, which have their own `unshare`) with EPERM. Inside a user namespace
 * of its own a program would hold every capability there and could mount, say, an uncapped tmpfs.
 * Used in both of bubblewrap's modes: running as root bubblewrap makes no user namespace of its own,
 * so its `--disable-userns` cannot apply there.
 */

/** File descriptor bubblewrap reads the filter from (`--seccomp 4`). */
export const SECCOMP_FD = 4;

const CLONE_NEWUSER = 0x10000000;
const EPERM = 1;
const ENOSYS = 38;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
/** x32 syscalls are x86-64 ones with this bit set. */
const X32_BIT = 0x40000000;

/** AUDIT_ARCH and syscall numbers of the architectures the filter knows. */
const ARCHES: Partial<
  Record<NodeJS.Architecture, { audit: number; unshare: number; clone: number; clone3: number }>
> = {
  x64: { audit: 0xc000003e, unshare: 272, clone: 56, clone3: 435 },
  arm64: { audit: 0xc00000b7, unshare: 97, clone: 220, clone3: 435 },
};

type Insn = [code: number, jt: number, jf: number, k: number];
const ld = (offset: number): Insn => [0x20, 0, 0, offset];
const jeq = (k: number, jt: number, jf: number): Insn => [0x15, jt, jf, k];
const jge = (k: number, jt: number, jf: number): Insn => [0x35, jt, jf, k];
const jset = (k: number, jt: number, jf: number): Insn => [0x45, jt, jf, k];
const ret = (k: number): Insn => [0x06, 0, 0, k];

/** The filter for this machine's architecture, or null when it is not one the filter knows. */
export function noUserNamespacesFilter(arch: NodeJS.Architecture = process.arch): Buffer | null {
  const a = ARCHES[arch];
  if (!a) return null;
  // Jump offsets count instructions after the next one (see the numbered lines).
  const program: Insn[] = [
    ld(4), // 0: A = arch
    jeq(a.audit, 0, 7), // 1: another ABI -> 9
    ld(0), // 2: A = syscall number
    jge(X32_BIT, 5, 0), // 3: x32 -> 9
    jeq(a.unshare, 2, 0), // 4: unshare -> 7
    jeq(a.clone, 1, 0), // 5: clone -> 7
    jeq(a.clone3, 3, 4), // 6: clone3 -> 10, anything else -> 11
    ld(16), // 7: A = low 32 bits of the first argument (the flags)
    jset(CLONE_NEWUSER, 0, 2), // 8: CLONE_NEWUSER -> 9, else -> 11
    ret(RET_ERRNO | EPERM), // 9
    ret(RET_ERRNO | ENOSYS), // 10
    ret(RET_ALLOW), // 11
  ];
  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}
