/**
 * The words a problem states numbers with (edge/routing/problem-structure.ts `numbersOf`): cardinals,
 * fractions said after a number, ordinals that are positions, and multiples.
 */
export const NUMBER_WORDS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
  hundred: 100,
  thousand: 1000,
  dozen: 12,
};

/** Fractions said after a number: `three and a half`, `2 and a quarter`. */
export const FRACTIONS: Record<string, number> = { half: 0.5, quarter: 0.25 };

/** Ordinals that are positions in some places only (problem-structure.ts `LOW_ORDINAL`). */
export const LOW_ORDINALS: Record<string, number> = { first: 1, second: 2, third: 3 };

/** Ordinals that are positions (`the tenth term` = `the 10th term`); `first`..`third` are too common. */
export const ORDINALS: Record<string, number> = {
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  eleventh: 11,
  twelfth: 12,
  fifteenth: 15,
  twentieth: 20,
  thirtieth: 30,
  fiftieth: 50,
  hundredth: 100,
};

/** Words that state a factor (`twice as old`, `double the previous term`). */
export const MULTIPLES: Record<string, number> = { twice: 2, double: 2, doubles: 2, triple: 3, thrice: 3 };
