/** number-theory families. */
import type { Family } from "./family.js";

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

const isPrime = (m: number): boolean => {
  if (m < 2) return false;
  for (let d = 2; d * d <= m; d++) if (m % d === 0) return false;
  return true;
};

export const NUMBER_THEORY: Family[] = [
  {
    id: "greatest-common-divisor",
    domain: "number-theory",
    params: ["a", "b"],
    phrasings: [
      "What is the greatest common divisor of {a} and {b}?",
      "Find the highest common factor of {a} and {b}.",
      "{@person} has {a} red beads and {b} blue beads and wants to make identical bracelets that use up all of them. What is the largest number of bracelets {@person} can make?",
      "A floor measuring {a} cm by {b} cm is to be covered with equal square tiles, with no gaps and no cutting. What is the largest possible side of a tile, in cm?",
      "What is the largest whole number that divides both {b} and {a} exactly?",
      "Find the largest number that is a factor of both {a} and {b}.",
    ],
    method: "Use the Euclidean algorithm (math.gcd) to find the greatest common divisor.",
    program: "import math\nprint(math.gcd(a, b))",
    sample(rng) {
      const g = rng.int(2, 30);
      const m = rng.int(1, 20);
      let n = rng.int(1, 20);
      while (n === m) n = rng.int(1, 20);
      return { a: g * m, b: g * n };
    },
    answer: (p) => String(gcd(p.a as number, p.b as number)),
  },
  {
    id: "least-common-multiple",
    domain: "number-theory",
    params: ["a", "b"],
    phrasings: [
      "What is the least common multiple of {a} and {b}?",
      "Find the smallest positive number that is a multiple of both {a} and {b}.",
      "One bus leaves the station every {a} minutes and another every {b} minutes. If both leave now, in how many minutes will they next leave together?",
      "Cups come in packs of {a} and lids in packs of {b}. What is the smallest number of cups {@person} can buy so that there can be exactly as many lids as cups?",
      "Two lights flash, one every {a} seconds and the other every {b} seconds. They have just flashed together. After how many seconds will they next flash together?",
      "What is the lowest common multiple of {b} and {a}?",
    ],
    method:
      "The least common multiple is the product of the numbers divided by their greatest common divisor.",
    program: "import math\nprint(a * b // math.gcd(a, b))",
    sample(rng) {
      const a = rng.int(2, 30);
      let b = rng.int(2, 30);
      while (b === a) b = rng.int(2, 30);
      return { a, b };
    },
    answer: (p) => {
      const a = p.a as number;
      const b = p.b as number;
      return String((a * b) / gcd(a, b));
    },
  },
  {
    id: "division-remainder",
    domain: "number-theory",
    params: ["n", "k"],
    phrasings: [
      "What is the remainder when {n} is divided by {k}?",
      "{@person} shares {n} marbles equally among {k} friends, giving each friend as many as possible. How many marbles are left over?",
      "Eggs are packed in cartons of {k}. If there are {n} eggs, how many are left after filling as many cartons as possible?",
      "Find {n} mod {k}.",
      "{n} students are split into teams of {k}. How many students are left without a full team?",
      "When {n} is divided by {k}, what remainder do you get?",
    ],
    method:
      "The remainder is what is left after taking away as many whole groups of the divisor as possible.",
    program: "print(n % k)",
    sample(rng) {
      return { n: rng.int(20, 1000), k: rng.int(3, 25) };
    },
    answer: (p) => String((p.n as number) % (p.k as number)),
  },
  {
    id: "count-divisors",
    domain: "number-theory",
    params: ["n"],
    phrasings: [
      "How many positive divisors does {n} have?",
      "Find the number of factors of {n}.",
      "{n} chairs must be set out in rows that all have the same number of chairs. How many different numbers of rows are possible, counting a single row and one chair per row?",
      "How many whole numbers divide {n} with no remainder?",
      "Count the positive integers that are factors of {n}.",
      "What is the total number of divisors of {n}, including one and the number itself?",
    ],
    method: "Count the numbers from one up to n that divide n exactly.",
    program: "print(sum(1 for d in range(1, n + 1) if n % d == 0))",
    sample(rng) {
      return { n: rng.int(6, 500) };
    },
    answer: (p) => {
      const n = p.n as number;
      let count = 0;
      for (let d = 1; d <= n; d++) if (n % d === 0) count++;
      return String(count);
    },
  },
  {
    id: "digit-sum",
    domain: "number-theory",
    params: ["n"],
    phrasings: [
      "What is the sum of the digits of {n}?",
      "Add up the digits of the number {n}.",
      "{@person}'s locker code is {n}. What do its digits add up to?",
      "Find the digit sum of {n}.",
      "If you add together every digit in {n}, what total do you get?",
      "What total do the individual digits of {n} give when they are added?",
    ],
    method: "Add the digits of the number one by one.",
    program: "print(sum(int(ch) for ch in str(n)))",
    sample(rng) {
      return { n: rng.int(100, 999999) };
    },
    answer: (p) =>
      String(
        String(p.n)
          .split("")
          .reduce((sum, ch) => sum + Number(ch), 0),
      ),
  },
  {
    id: "count-multiples-up-to",
    domain: "number-theory",
    params: ["k", "n"],
    phrasings: [
      "How many positive multiples of {k} are less than or equal to {n}?",
      "How many whole numbers from one up to {n} are divisible by {k}?",
      "A row of {n} lockers is numbered in order starting at one, and every locker whose number is divisible by {k} is painted red. How many lockers are red?",
      "Count the positive integers not exceeding {n} that are multiples of {k}.",
      "{@person} counts from one to {n} and claps on every multiple of {k}. How many times does {@person} clap?",
      "How many numbers from one to {n} can be divided by {k} with no remainder?",
    ],
    method: "The count of multiples of k up to n is n divided by k, rounded down.",
    program: "print(n // k)",
    sample(rng) {
      return { k: rng.int(2, 25), n: rng.int(50, 1000) };
    },
    answer: (p) => String(Math.floor((p.n as number) / (p.k as number))),
  },
  {
    id: "largest-prime-factor",
    domain: "number-theory",
    params: ["n"],
    phrasings: [
      "What is the largest prime factor of {n}?",
      "Find the greatest prime number that divides {n}.",
      "Write {n} as a product of primes. Which is the biggest prime in the product?",
      "Of all the prime numbers that divide {n} exactly, which is the largest?",
      "What is the highest prime divisor of {n}?",
      "Which prime is the largest one in the prime factorization of {n}?",
    ],
    method: "Divide out prime factors from the smallest up; the last prime factor found is the largest.",
    program:
      "m, q, big = n, 2, 1\nwhile q * q <= m:\n    while m % q == 0:\n        big, m = q, m // q\n    q += 1\nprint(m if m > 1 else big)",
    sample(rng) {
      for (;;) {
        const n = rng.int(12, 10000);
        if (!isPrime(n)) return { n };
      }
    },
    answer: (p) => {
      let m = p.n as number;
      let big = 1;
      for (let q = 2; q * q <= m; q++)
        while (m % q === 0) {
          big = q;
          m /= q;
        }
      return String(m > 1 ? m : big);
    },
  },
  {
    id: "primes-in-range",
    domain: "number-theory",
    params: ["a", "b"],
    phrasings: [
      "How many prime numbers are there between {a} and {b}, inclusive?",
      "Count the primes from {a} to {b}, including both ends.",
      "How many of the whole numbers from {a} through {b} are prime?",
      "{@person} writes down every integer from {a} to {b}. How many of the numbers written are prime?",
      "Find how many primes lie in the range from {a} to {b}, with both endpoints included.",
      "Among the integers {a} to {b} inclusive, how many are prime numbers?",
    ],
    method: "Test each number in the range for a divisor up to its square root and count the primes.",
    program:
      "import math\nprint(sum(1 for m in range(a, b + 1) if m > 1 and all(m % d for d in range(2, math.isqrt(m) + 1))))",
    sample(rng) {
      const a = rng.int(1, 150);
      return { a, b: a + rng.int(10, 100) };
    },
    answer: (p) => {
      let count = 0;
      for (let m = p.a as number; m <= (p.b as number); m++) if (isPrime(m)) count++;
      return String(count);
    },
  },
  {
    id: "last-digit-of-power",
    domain: "number-theory",
    params: ["a", "n"],
    phrasings: [
      "What is the last digit of {a} to the power {n}?",
      "Find the units digit of {a} raised to the power of {n}.",
      "If you multiply together {n} copies of the number {a}, what is the last digit of the result?",
      "What digit is in the ones place of {a} to the power {n}?",
      "{@person} raises {a} to the power {n}. What is the final digit of the answer?",
      "Find the rightmost digit of {a} to the power {n}.",
    ],
    method: "Only the last digit matters, so compute the power modulo ten.",
    program: "print(pow(a, n, 10))",
    sample(rng) {
      return { a: rng.int(2, 99), n: rng.int(5, 200) };
    },
    answer: (p) => {
      let digit = 1;
      for (let i = 0; i < (p.n as number); i++) digit = (digit * (p.a as number)) % 10;
      return String(digit);
    },
  },
  {
    id: "repeating-cycle-position",
    domain: "number-theory",
    params: ["k", "n"],
    phrasings: [
      "{k} children stand in a circle, numbered in order starting from one. Counting around the circle from child one, which child is reached on count {n}?",
      "A light cycles through {k} colours, numbered from one, in the same order over and over. Step one shows colour one. Which colour number is shown at step {n}?",
      "A pattern of {k} beads repeats along a long necklace. Counting from the start, bead number {n} is which bead of the pattern?",
      "Students count off in groups of {k}, calling one, two, three and so on and starting again at one after each group. What number does student {n} in the line call out?",
      "A playlist of {k} songs repeats from the top when it ends. Counting the songs played from the start, which track number is song {n}?",
      "Weekly shifts rotate among {k} workers, numbered from one, in a fixed order, with worker one on duty in week one. Which worker is on duty in week {n}?",
    ],
    method: "Position n in a cycle of length k is one more than the remainder of n minus one divided by k.",
    program: "print((n - 1) % k + 1)",
    sample(rng) {
      const k = rng.int(3, 12);
      return { k, n: rng.int(k + 1, 1000) };
    },
    answer: (p) => String((((p.n as number) - 1) % (p.k as number)) + 1),
  },
];
