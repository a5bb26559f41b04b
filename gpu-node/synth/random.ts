/**
 * Seeded, fast weight generation. Each weight is a draw from a discretised N(0, std): a
 * 32-bit draw of the project's generator (shared/random.ts) indexes a table of normal quantiles, so 12B parameters take seconds,
 * not minutes, and the same seed always yields the same bytes.
 */

/** Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9). */
export function inverseNormal(p: number): number {
  const a = [
    -39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716,
    2.506628277459239,
  ];
  const b = [
    -54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572,
  ];
  const c = [
    -0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const [a0, a1, a2, a3, a4, a5] = a as [number, number, number, number, number, number];
  const [b0, b1, b2, b3, b4] = b as [number, number, number, number, number];
  const [c0, c1, c2, c3, c4, c5] = c as [number, number, number, number, number, number];
  const [d0, d1, d2, d3] = d as [number, number, number, number];
  const tail = (q: number) =>
    (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q) /
    (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1)
  );
}

/** IEEE 754 half-precision bits of a float (round to nearest; inputs here are small and finite). */
export function toHalfBits(value: number): number {
  const f32 = new Float32Array([value]);
  const x = new Uint32Array(f32.buffer)[0] ?? 0;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  let mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    return sign | ((mant + (1 << (shift - 1))) >>> shift);
  }
  if (exp >= 31) return sign | 0x7c00;
  const half = sign | (exp << 10) | (mant >>> 13);
  return (mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) === 0x1000 && half & 1) ? half + 1 : half;
}

/** 65,536 f16 bit patterns of N(0, std) quantiles, indexed by 16 random bits. */
export function normalHalfTable(std: number): Uint16Array {
  const table = new Uint16Array(65536);
  for (let i = 0; i < 65536; i++) table[i] = toHalfBits(inverseNormal((i + 0.5) / 65536) * std);
  return table;
}

/** Q8_0 quantisation: 256 int8 levels of N(0, 1) * 40, and the per-block scale giving N(0, std). */
export function normalQ8Table(): Int8Array {
  const table = new Int8Array(256);
  for (let i = 0; i < 256; i++)
    table[i] = Math.max(-127, Math.min(127, Math.round(inverseNormal((i + 0.5) / 256) * 40)));
  return table;
}
export const Q8_LEVEL_SCALE = 40;
