/** algebra families. */
import type { Family } from "./family.js";

/** a / b, written as an integer (the callers make sure it divides exactly). */
const div = (a: number, b: number) => String(a / b);

export const ALGEBRA: Family[] = [
  {
    id: "solve-linear-equation",
    domain: "algebra",
    params: ["a", "b", "c"],
    phrasings: [
      "Solve {a}x + {b} = {c} for x.",
      "What value of x makes the equation {a}x + {b} = {c} true?",
      "{@person} thinks of a number, multiplies it by {a} and then adds {b}, getting {c}. What was the number?",
      "If {b} more than {a} times a number is {c}, what is the number?",
      "A taxi ride costs a ${b} flat fee plus ${a} per mile. {@person} paid ${c} in total. How many miles long was the ride?",
      "Find the number which, when multiplied by {a} and then increased by {b}, gives {c}.",
    ],
    method: "Subtract the constant from both sides, then divide by the coefficient of x.",
    program: "print((c - b) // a)",
    sample(rng) {
      const a = rng.int(2, 12);
      const x = rng.int(1, 30);
      const b = rng.int(1, 60);
      return { a, b, c: a * x + b };
    },
    answer: (p) => div((p.c as number) - (p.b as number), p.a as number),
  },
  {
    id: "two-numbers-sum-difference",
    domain: "algebra",
    params: ["s", "d"],
    phrasings: [
      "The sum of two numbers is {s} and their difference is {d}. What is the larger number?",
      "Two numbers add up to {s}, and one of them is {d} more than the other. Find the bigger one.",
      "{@person} and {@person2} have {s} stickers together, and {@person} has {d} more than {@person2}. How many stickers does {@person} have?",
      "Find the greater of two numbers whose difference is {d} and whose sum is {s}.",
      "A rope {s} m long is cut into two pieces so that one piece is {d} m longer than the other. How long is the longer piece, in metres?",
      "Two numbers differ by {d} and together total {s}. What is the larger of the two?",
    ],
    method: "The larger number is half of the sum plus the difference.",
    program: "print((s + d) // 2)",
    sample(rng) {
      const small = rng.int(1, 120);
      const d = rng.int(1, 60);
      return { s: 2 * small + d, d };
    },
    answer: (p) => div((p.s as number) + (p.d as number), 2),
  },
  {
    id: "consecutive-integers-sum",
    domain: "algebra",
    params: ["k", "s"],
    phrasings: [
      "The sum of {k} consecutive integers is {s}. What is the smallest of them?",
      "{k} consecutive whole numbers add up to {s}. Find the first one.",
      "Find the least of {k} consecutive numbers whose total is {s}.",
      "Over {k} days in a row {@person} read one more page each day than the day before, {s} pages in all. How many pages did {@person} read on the first day?",
      "When {k} back-to-back integers are added together the result is {s}. What is the lowest of these integers?",
      "What is the smallest number in a run of {k} consecutive integers that sum to {s}?",
    ],
    method:
      "Subtract the offsets zero, one, two and so on from the sum, then divide by how many numbers there are.",
    program: "print((s - k * (k - 1) // 2) // k)",
    sample(rng) {
      const k = rng.int(2, 7);
      const first = rng.int(1, 200);
      return { k, s: k * first + (k * (k - 1)) / 2 };
    },
    answer: (p) => {
      const k = p.k as number;
      return div((p.s as number) - (k * (k - 1)) / 2, k);
    },
  },
  {
    id: "linear-function-value",
    domain: "algebra",
    params: ["m", "b", "t"],
    phrasings: [
      "Given f(x) = {m}x + {b}, find f({t}).",
      "A function is defined by f(x) = {m}x + {b}. What is the value of f({t})?",
      "A plumber charges a ${b} call-out fee plus ${m} per hour. What is the bill for {t} hours of work, in dollars?",
      "What is y when x = {t} on the line y = {m}x + {b}?",
      "A tank already holds {b} litres and is filled at {m} litres per minute. How many litres are in it after {t} minutes?",
      "A phone plan costs ${b} to start plus ${m} for each month. What is the total cost after {t} months, in dollars?",
    ],
    method: "Multiply the rate by the input and add the starting value.",
    program: "print(m * t + b)",
    sample(rng) {
      return { m: rng.int(2, 15), b: rng.int(1, 100), t: rng.int(2, 30) };
    },
    answer: (p) => String((p.m as number) * (p.t as number) + (p.b as number)),
  },
  {
    id: "arithmetic-sequence-term",
    domain: "algebra",
    params: ["a", "d", "n"],
    phrasings: [
      "An arithmetic sequence starts at {a} and has common difference {d}. What is its {n}th term?",
      "The first term of an arithmetic progression is {a} and each term is {d} more than the one before. Find term number {n}.",
      "In a theater the front row has {a} seats and each row has {d} more seats than the row in front of it. How many seats are in row {n}?",
      "What is the {n}th number in the list that begins at {a} and goes up by {d} each step?",
      "{@person} saves ${a} in the first week and saves ${d} more each week than the week before. How much does {@person} save in week {n}, in dollars?",
      "Find the {n}th term of the arithmetic sequence with first term {a} and common difference {d}.",
    ],
    method: "The n-th term is the first term plus n minus one times the common difference.",
    program: "print(a + (n - 1) * d)",
    sample(rng) {
      return { a: rng.int(1, 50), d: rng.int(2, 15), n: rng.int(4, 20) };
    },
    answer: (p) => String((p.a as number) + ((p.n as number) - 1) * (p.d as number)),
  },
  {
    id: "arithmetic-series-sum",
    domain: "algebra",
    params: ["a", "d", "n"],
    phrasings: [
      "Find the sum of the first {n} terms of the arithmetic sequence with first term {a} and common difference {d}.",
      "An arithmetic series has {n} terms; the first is {a} and each term after that is {d} larger. What is the total?",
      "A theater has {n} rows. The front row has {a} seats and each row behind it has {d} more seats than the row before. How many seats are there in all?",
      "{@person} runs {a} km on the first day of training and adds {d} km each day. How many km does {@person} run in total over {n} days?",
      "Add up the numbers of the sequence that starts at {a} and goes up by {d} each time, taking {n} terms.",
      "A stack of logs has {a} logs in its top layer, and each layer below has {d} more logs than the one above. With {n} layers, how many logs are there altogether?",
    ],
    method: "The sum is the number of terms times the average of the first and last terms.",
    program: "print(n * (2 * a + (n - 1) * d) // 2)",
    sample(rng) {
      return { a: rng.int(1, 50), d: rng.int(1, 10), n: rng.int(3, 30) };
    },
    answer: (p) => {
      const n = p.n as number;
      return div(n * (2 * (p.a as number) + (n - 1) * (p.d as number)), 2);
    },
  },
  {
    id: "geometric-sequence-term",
    domain: "algebra",
    params: ["a", "r", "n"],
    phrasings: [
      "A geometric sequence has first term {a} and common ratio {r}. What is its {n}th term?",
      "The first term of a geometric progression is {a} and each term is {r} times the previous one. Find term number {n}.",
      "{@person} writes down {a}, and then gets each next number by multiplying the last one by {r}. What is the {n}th number written?",
      "In a chain letter, {a} people get the letter in the first round, and each round {r} times as many people get it as in the round before. How many people get it in round {n}?",
      "Each term of a sequence is {r} times the one before it, and the sequence begins with {a}. What is term {n}?",
      "Find the {n}th term of the geometric sequence whose first term is {a} and whose ratio is {r}.",
    ],
    method: "The n-th term is the first term times the ratio to the power n minus one.",
    program: "print(a * r ** (n - 1))",
    sample(rng) {
      for (;;) {
        const a = rng.int(1, 20);
        const r = rng.int(2, 5);
        const n = rng.int(4, 10);
        if (a * r ** (n - 1) < 1_000_000) return { a, r, n };
      }
    },
    answer: (p) => String((p.a as number) * (p.r as number) ** ((p.n as number) - 1)),
  },
  {
    id: "linear-system-two-unknowns",
    domain: "algebra",
    params: ["a", "b", "c", "d", "e", "f"],
    phrasings: [
      "Solve the system {a}x + {b}y = {c} and {d}x + {e}y = {f}. What is x?",
      "If {a}x + {b}y = {c} and {d}x + {e}y = {f}, find the value of x.",
      "Find x, given that {a}x + {b}y equals {c} while {d}x + {e}y equals {f}.",
      "{a} pens and {b} notebooks cost ${c}, and {d} pens and {e} notebooks cost ${f}. How much does one pen cost, in dollars?",
      "At a fruit stand, {a} apples and {b} pears cost ${c}, while {d} apples and {e} pears cost ${f}. What is the price of one apple, in dollars?",
      "The equations {a}x + {b}y = {c} and {d}x + {e}y = {f} have one common solution. What is its x-value?",
    ],
    method: "Eliminate y by cross-multiplying the coefficients (Cramer's rule) and solve for x.",
    program: "print((c * e - b * f) // (a * e - b * d))",
    sample(rng) {
      for (;;) {
        const x = rng.int(1, 20);
        const y = rng.int(1, 20);
        const a = rng.int(2, 9);
        const b = rng.int(2, 9);
        const d = rng.int(2, 9);
        const e = rng.int(2, 9);
        if (a * e - b * d !== 0) return { a, b, c: a * x + b * y, d, e, f: d * x + e * y };
      }
    },
    answer: (p) => {
      const a = p.a as number;
      const b = p.b as number;
      const c = p.c as number;
      const d = p.d as number;
      const e = p.e as number;
      const f = p.f as number;
      return div(c * e - b * f, a * e - b * d);
    },
  },
  {
    id: "quadratic-roots-sum-product",
    domain: "algebra",
    params: ["s", "p"],
    phrasings: [
      "The equation x squared minus {s}x plus {p} equals zero has two whole-number roots. What is the larger root?",
      "Two numbers have a sum of {s} and a product of {p}. What is the larger of the two?",
      "A rectangle's length and width add up to {s} m and its area is {p} square metres. How long is the longer side, in metres?",
      "What is the greater root of the quadratic x squared minus {s}x + {p} = zero?",
      "Factor x squared minus {s}x plus {p} and give the bigger of its two roots.",
      "Two positive integers multiply to {p} and add to {s}. Find the larger one.",
    ],
    method:
      "The numbers are the roots of x squared minus sum times x plus product; take the larger root from the quadratic formula.",
    program: "import math\nprint((s + math.isqrt(s * s - 4 * p)) // 2)",
    sample(rng) {
      const small = rng.int(1, 15);
      const big = rng.int(small, 20);
      return { s: small + big, p: small * big };
    },
    answer: (p) => {
      const s = p.s as number;
      return div(s + Math.round(Math.sqrt(s * s - 4 * (p.p as number))), 2);
    },
  },
  {
    id: "age-multiple-in-years",
    domain: "algebra",
    params: ["p", "c", "k"],
    phrasings: [
      "{@person} is {p} years old and {@person2} is {c}. In how many years will {@person} be {k} times as old as {@person2}?",
      "A mother is {p} and her son is {c}. After how many years will the mother's age be {k} times the son's?",
      "{@person2} is {c} years old and {@person} is {p}. How many years from now will {@person}'s age be exactly {k} times {@person2}'s age?",
      "In how many years will a {p}-year-old teacher be {k} times as old as a {c}-year-old student?",
      "Today a father is {p} years old and his daughter is {c}. How many years will it take until he is {k} times her age?",
      "{@person}'s uncle is {p} and {@person} is {c}. How many years must pass before the uncle is {k} times as old as {@person}?",
    ],
    method: "In t years the ages are p plus t and c plus t; set p + t = k(c + t) and solve for t.",
    program: "print((p - k * c) // (k - 1))",
    sample(rng) {
      for (;;) {
        const c = rng.int(1, 15);
        const t = rng.int(1, 20);
        const k = rng.int(2, 4);
        const p = k * (c + t) - t;
        if (p <= 90 && p - c >= 18) return { p, c, k };
      }
    },
    answer: (p) => {
      const k = p.k as number;
      return div((p.p as number) - k * (p.c as number), k - 1);
    },
  },
];
