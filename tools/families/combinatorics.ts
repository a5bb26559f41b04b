/** combinatorics families: counting choices, arrangements, pairings, outfits, words and paths. */
import type { Family } from "./family.js";

const num = (x: number | undefined) => x as number;

function factorial(n: number): number {
  let f = 1;
  for (let i = 2; i <= n; i++) f *= i;
  return f;
}

/** n choose k, exact for the small sizes the samplers draw. */
function comb(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

/** Ordered arrangements of k things out of n. */
function perm(n: number, k: number): number {
  let p = 1;
  for (let i = 0; i < k; i++) p *= n - i;
  return p;
}

export const COMBINATORICS: Family[] = [
  {
    id: "choose-k-of-n",
    domain: "combinatorics",
    params: ["n", "k"],
    phrasings: [
      "In how many ways can {@person} choose {k} books from a shelf of {n} different books?",
      "A pizza shop offers {n} toppings. How many different pizzas with exactly {k} distinct toppings can be ordered?",
      "{@person} must answer {k} of the {n} questions on a test. How many different sets of questions could {@person} pick?",
      "From a class of {n} students, a teacher selects a group of {k} to clean the room. How many different groups are possible?",
      "Count the ways to pick {k} flavours out of {n} available flavours when the order of picking does not matter.",
      "There are {n} songs on a playlist and {@person} wants to pick {k} of them for a mixtape, in no particular order. How many different selections can be made?",
    ],
    method: "The order does not matter, so the count is n choose k.",
    program: "import math\nprint(math.comb(n, k))",
    sample(rng) {
      const n = rng.int(5, 16);
      const k = rng.int(2, Math.min(6, n - 1));
      return { n, k };
    },
    answer: (p) => String(comb(num(p.n), num(p.k))),
  },
  {
    id: "arrange-k-of-n",
    domain: "combinatorics",
    params: ["n", "k"],
    phrasings: [
      "{n} runners take part in a race. In how many ways can the first {k} places be filled, assuming no ties?",
      "A club of {n} members must fill {k} different posts, such as president and secretary, with a different member in each. How many ways can the posts be filled?",
      "How many ways can {@person} line up {k} of {n} different trophies in a row on a shelf?",
      "A code uses {k} different letters chosen from a set of {n} letters, and the order matters. How many codes are possible?",
      "Find the number of ordered arrangements of {k} objects taken from {n} distinct objects.",
      "{@person} has {n} different postcards and pins {k} of them in a row on a board. How many different rows can {@person} make?",
    ],
    method: "The order matters, so multiply n by each smaller number, k factors in all.",
    program: "import math\nprint(math.perm(n, k))",
    sample(rng) {
      const n = rng.int(4, 12);
      const k = rng.int(2, Math.min(4, n - 1));
      return { n, k };
    },
    answer: (p) => String(perm(num(p.n), num(p.k))),
  },
  {
    id: "handshakes-among-people",
    domain: "combinatorics",
    params: ["n"],
    phrasings: [
      "At a party, each of the {n} guests shakes hands once with every other guest. How many handshakes take place?",
      "{n} teams play in a league where every team plays every other team exactly once. How many games are played?",
      "How many straight lines can be drawn joining pairs of {n} points, if no three of the points lie on a line?",
      "In a chess club of {n} players, each player plays one game against each other player. Find the total number of games.",
      "Every pair among {n} friends swaps phone numbers exactly once. How many swaps happen in total?",
      "Everyone in a meeting of {n} people greets everyone else with a single handshake. What is the total count of handshakes?",
    ],
    method: "Each pair shakes once, so the count is n times n minus one, halved.",
    program: "print(n * (n - 1) // 2)",
    sample: (rng) => ({ n: rng.int(3, 40) }),
    answer: (p) => String((num(p.n) * (num(p.n) - 1)) / 2),
  },
  {
    id: "outfit-combinations",
    domain: "combinatorics",
    params: ["shirts", "trousers", "shoes"],
    phrasings: [
      "{@person} owns {shirts} shirts, {trousers} pairs of trousers and {shoes} pairs of shoes. How many different outfits can {@person} wear?",
      "A café offers {shirts} starters, {trousers} main courses and {shoes} desserts. How many different three-course meals can be ordered?",
      "With {shoes} pairs of shoes, {shirts} tops and {trousers} skirts, how many outfits of one of each can {@person} put together?",
      "A sandwich is made from one of {trousers} breads, one of {shirts} fillings and one of {shoes} sauces. How many different sandwiches are possible?",
      "Find the number of ways to pick one hat from {shirts} hats, one scarf from {trousers} scarves and one pair of gloves from {shoes} pairs.",
      "For the trip, {@person} packs {shirts} T-shirts, {trousers} pairs of shorts and {shoes} pairs of sandals. Wearing one of each, how many different looks are there?",
    ],
    method: "Multiply the number of choices for each item together.",
    program: "print(shirts * trousers * shoes)",
    sample: (rng) => ({ shirts: rng.int(2, 12), trousers: rng.int(2, 9), shoes: rng.int(2, 6) }),
    answer: (p) => String(num(p.shirts) * num(p.trousers) * num(p.shoes)),
  },
  {
    id: "word-arrangements-repeats",
    domain: "combinatorics",
    params: ["a", "b", "c"],
    phrasings: [
      "A word is made of {a} letters A, {b} letters B and {c} letters C. How many different arrangements of all its letters are there?",
      "{@person} hangs {a} red flags, {b} blue flags and {c} green flags in a row. Flags of the same colour look alike. How many different rows are possible?",
      "How many distinct strings can be formed using all of {a} identical X tiles, {b} identical Y tiles and {c} identical Z tiles?",
      "There are {b} white beads, {c} black beads and {a} grey beads to thread in a line. Beads of one colour are identical. How many different lines can be made?",
      "Count the distinct orderings of a list containing the letter P {a} times, the letter Q {b} times and the letter R {c} times.",
      "On a shelf, {@person} lines up {a} identical maths books, {b} identical history books and {c} identical art books. How many different-looking arrangements are there?",
    ],
    method: "Divide the factorial of the total number of letters by the factorial of each letter's count.",
    program:
      "import math\nprint(math.factorial(a + b + c) // (math.factorial(a) * math.factorial(b) * math.factorial(c)))",
    sample(rng) {
      const a = rng.int(1, 4);
      const b = rng.int(1, 4);
      const c = rng.int(1, 3);
      return { a, b, c };
    },
    answer: (p) =>
      String(
        factorial(num(p.a) + num(p.b) + num(p.c)) /
          (factorial(num(p.a)) * factorial(num(p.b)) * factorial(num(p.c))),
      ),
  },
  {
    id: "grid-paths",
    domain: "combinatorics",
    params: ["a", "b"],
    phrasings: [
      "On a grid, {@person} walks from the bottom-left corner to a point {a} blocks east and {b} blocks north, moving only east or north. How many shortest routes are there?",
      "A robot moves only right or up. How many paths take it from the corner of a grid to the square {a} steps right and {b} steps up?",
      "In a city of square blocks, home is {b} blocks south and {a} blocks west of school. How many shortest walking routes lead from home to school?",
      "How many lattice paths go from one corner of a rectangle {a} units wide and {b} units tall to the opposite corner, using only unit steps right or up?",
      "Find the number of ways to arrange {a} right moves and {b} up moves in a single route.",
      "A game piece on a board may only step one square up or one square right at a time. In how many ways can it travel {a} squares right and {b} squares up?",
    ],
    method:
      "A route is a choice of which of the a plus b steps go east, so the count is (a plus b) choose a.",
    program: "import math\nprint(math.comb(a + b, a))",
    sample: (rng) => ({ a: rng.int(2, 8), b: rng.int(2, 8) }),
    answer: (p) => String(comb(num(p.a) + num(p.b), num(p.a))),
  },
  {
    id: "committee-with-fixed-member",
    domain: "combinatorics",
    params: ["n", "k"],
    phrasings: [
      "A committee of {k} is chosen from {n} people, and {@person} must be on it. How many different committees are possible?",
      "From {n} players, a coach picks a squad of {k}, and the captain {@person} is always included. How many squads can be picked?",
      "{@person} is one of {n} students. A team of {k} students is chosen so that {@person} is on the team. In how many ways can this be done?",
      "How many groups of {k} can be formed from {n} club members if one particular member has to be in every group?",
      "A panel of {k} judges is selected from {n} candidates. The head judge {@person} is certain to be chosen. How many panels are possible?",
      "Out of {n} volunteers, {k} will be chosen for a trip, and {@person} has already been guaranteed a place. How many different groups of travellers could there be?",
    ],
    method:
      "The fixed member takes one place, so choose the other k minus one from the other n minus one people.",
    program: "import math\nprint(math.comb(n - 1, k - 1))",
    sample(rng) {
      const n = rng.int(5, 18);
      const k = rng.int(2, Math.min(6, n - 1));
      return { n, k };
    },
    answer: (p) => String(comb(num(p.n) - 1, num(p.k) - 1)),
  },
];
