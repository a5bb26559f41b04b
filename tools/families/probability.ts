/** probability families: single draws, independent events, complements, dice, expectation. */
import type { Family } from "./family.js";

const num = (x: number | undefined) => x as number;

function gcd(a: number, b: number): number {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y) [x, y] = [y, x % y];
  return x;
}

/** The fraction a/b reduced, as Python's Fraction prints it ("1/6", or "2" when whole). */
function fraction(a: number, b: number): string {
  const g = gcd(a, b) || 1;
  const n = a / g;
  const d = b / g;
  return d === 1 ? String(n) : `${n}/${d}`;
}

export const PROBABILITY: Family[] = [
  {
    id: "bag-draw-colour",
    domain: "probability",
    params: ["red", "blue", "green"],
    phrasings: [
      "A bag holds {red} red, {blue} blue and {green} green marbles. One marble is drawn at random. What is the probability that it is blue?",
      "{@person} picks one sock without looking from a drawer with {blue} blue socks, {red} red socks and {green} green socks. What is the chance it is blue, as a fraction?",
      "In a jar there are {green} green sweets, {red} red sweets and {blue} blue sweets. If one sweet is taken at random, find the probability of getting a blue one.",
      "A box contains {red} red pens, {blue} blue pens and {green} green pens. What fraction of the time would a randomly chosen pen be blue?",
      "Find the probability of choosing a blue counter at random from {red} red counters, {green} green counters and {blue} blue counters.",
      "A raffle drum has {red} red tickets, {blue} blue tickets and {green} green tickets. {@person} pulls out one ticket at random. How likely is it to be blue?",
    ],
    method: "The probability is the number of blue items divided by the total number of items.",
    program: "from fractions import Fraction\nprint(Fraction(blue, red + blue + green))",
    sample: (rng) => ({ red: rng.int(1, 15), blue: rng.int(1, 15), green: rng.int(1, 15) }),
    answer: (p) => fraction(num(p.blue), num(p.red) + num(p.blue) + num(p.green)),
  },
  {
    id: "two-draws-with-replacement",
    domain: "probability",
    params: ["red", "blue"],
    phrasings: [
      "A bag has {red} red balls and {blue} blue balls. A ball is drawn, put back, and a second ball is drawn. What is the probability that the first is red and the second is blue?",
      "{@person} draws a card from a pile of {red} red cards and {blue} blue cards, replaces it, shuffles and draws again. Find the probability of red first and then blue.",
      "A box holds {blue} blue tokens and {red} red tokens. Two tokens are drawn one at a time with replacement. What is the chance of getting red on the first draw and blue on the second?",
      "With replacement, two marbles are taken from a jar of {red} red and {blue} blue marbles. What is the probability that the first is red and the second blue?",
      "Find the probability of picking red and then blue when drawing twice, with replacement, from {red} red beads and {blue} blue beads.",
      "A spinner has {red} red sections and {blue} blue sections, all the same size. {@person} spins it twice. What is the probability that the first spin lands on red and the second on blue?",
    ],
    method: "The draws are independent, so multiply the chance of red by the chance of blue.",
    program: "from fractions import Fraction\nprint(Fraction(red, red + blue) * Fraction(blue, red + blue))",
    sample: (rng) => ({ red: rng.int(1, 12), blue: rng.int(1, 12) }),
    answer: (p) => fraction(num(p.red) * num(p.blue), (num(p.red) + num(p.blue)) ** 2),
  },
  {
    id: "at-least-one-head",
    domain: "probability",
    params: ["n"],
    phrasings: [
      "A fair coin is flipped {n} times. What is the probability of getting at least one head?",
      "{@person} tosses a fair coin {n} times in a row. Find the probability that heads comes up at least once.",
      "What is the chance that {n} tosses of a fair coin are not all tails?",
      "If {n} fair coins are thrown together, what is the probability that at least one of them shows heads?",
      "Find the probability of at least one head when a fair coin is tossed {n} times.",
      "{@person} flips a fair coin {n} times. How likely is it that at least one flip lands heads up?",
    ],
    method: "The chance of no heads is one half to the power n, so subtract it from one.",
    program: "from fractions import Fraction\nprint(1 - Fraction(1, 2 ** n))",
    sample: (rng) => ({ n: rng.int(2, 10) }),
    answer: (p) => fraction(2 ** num(p.n) - 1, 2 ** num(p.n)),
  },
  {
    id: "two-dice-sum",
    domain: "probability",
    params: ["target"],
    phrasings: [
      "Two fair six-sided dice are rolled. What is the probability that their sum is {target}?",
      "{@person} rolls a pair of ordinary dice. Find the probability that the two numbers add up to {target}.",
      "What is the chance of a total of {target} when two standard dice are thrown?",
      "Two fair dice are rolled and the faces are added. How likely is the sum to equal {target}?",
      "Find the probability of rolling a sum of {target} with two fair six-sided dice.",
      "In a board game, {@person} throws two dice and needs a total of exactly {target}. What is the probability of that?",
    ],
    method: "Count the pairs of faces out of all thirty-six that add to the target.",
    program:
      "from fractions import Fraction\nways = sum(1 for i in range(1, 7) for j in range(1, 7) if i + j == target)\nprint(Fraction(ways, 36))",
    sample: (rng) => ({ target: rng.int(2, 12) }),
    answer: (p) => fraction(6 - Math.abs(num(p.target) - 7), 36),
  },
  {
    id: "expected-winnings-spinner",
    domain: "probability",
    params: ["sections", "winning", "prize"],
    phrasings: [
      "A spinner has {sections} equal sections, and {winning} of them win ${prize}; the others win nothing. What is the expected winnings of one spin, in dollars?",
      "A raffle has {sections} tickets, and {winning} of them each pay ${prize}. {@person} buys one ticket. What is the expected amount won, in dollars?",
      "{@person} plays a game that pays ${prize} on {winning} of {sections} equally likely outcomes and nothing otherwise. What are the expected winnings per game?",
      "Of {sections} equally likely cards, {winning} are prize cards worth ${prize} each and the rest are worth nothing. Find the expected value of drawing one card, in dollars.",
      "A game pays ${prize} with probability {winning} out of {sections}, and zero otherwise. What is the expected payout in dollars?",
      "In a lucky-dip box of {sections} envelopes, {winning} hold ${prize} each and the rest are empty. On average, how many dollars does {@person} expect to get from one envelope?",
    ],
    method: "The expected value is the prize times the chance of winning, winning over sections.",
    program: "print(round(prize * winning / sections, 2))",
    sample(rng) {
      // Sections divide a hundred, so the expectation is a whole number of cents.
      const sections = rng.pick([4, 5, 10, 20, 25, 50]);
      const winning = rng.int(1, Math.min(sections - 1, 12));
      const prize = rng.int(2, 100);
      return { sections, winning, prize };
    },
    answer: (p) => String((num(p.prize) * num(p.winning) * (100 / num(p.sections))) / 100),
  },
  {
    id: "complement-probability-percent",
    domain: "probability",
    params: ["p"],
    phrasings: [
      "The chance of rain tomorrow is {p}%. What is the probability that it does not rain, as a fraction?",
      "A basketball player makes a free throw {p}% of the time. What is the probability, as a fraction, that the player misses a free throw?",
      "{@person}'s bus is late on {p}% of days. Find the probability, as a reduced fraction, that the bus is on time on a given day.",
      "If a machine produces a faulty part with probability {p}%, what is the probability that a part is not faulty? Write it as a fraction.",
      "An event happens with probability {p}%. Express the probability that it does not happen as a fraction in lowest terms.",
      "There is a {p}% chance that {@person} wins a prize at the fair. As a fraction, what is the probability that {@person} goes home without a prize?",
    ],
    method:
      "The complement's probability is one minus the probability, here one hundred minus p over one hundred.",
    program: "from fractions import Fraction\nprint(Fraction(100 - p, 100))",
    sample: (rng) => ({ p: rng.int(1, 99) }),
    answer: (p) => fraction(100 - num(p.p), 100),
  },
  {
    id: "two-draws-without-replacement",
    domain: "probability",
    params: ["red", "blue"],
    phrasings: [
      "A bag contains {red} red marbles and {blue} blue marbles. Two marbles are drawn without replacement. What is the probability that both are red?",
      "{@person} takes two socks at random, one after the other, from a drawer of {blue} blue socks and {red} red socks. Find the probability that both socks are red.",
      "From a group of {red} girls and {blue} boys, two children are chosen at random. What is the chance that both are girls?",
      "A box has {red} red apples and {blue} green apples. Two apples are taken out without putting any back. How likely is it that both are red?",
      "Find the probability that two cards drawn without replacement from {red} red cards and {blue} black cards are both red.",
      "A jar holds {red} cherry sweets and {blue} lemon sweets. {@person} eats two sweets picked at random. What is the probability that both were cherry?",
    ],
    method:
      "Multiply the chance of red first by the chance of red second with one red fewer and one item fewer.",
    program:
      "from fractions import Fraction\nprint(Fraction(red, red + blue) * Fraction(red - 1, red + blue - 1))",
    sample: (rng) => ({ red: rng.int(2, 12), blue: rng.int(1, 12) }),
    answer: (p) => {
      const r = num(p.red);
      const t = r + num(p.blue);
      return fraction(r * (r - 1), t * (t - 1));
    },
  },
];
