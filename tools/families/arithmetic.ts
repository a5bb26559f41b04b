/** Arithmetic families: money, shopping, sharing, rates of plain quantities. */
import type { Family } from "./family.js";

export const ARITHMETIC: Family[] = [
  {
    id: "change-from-payment",
    domain: "arithmetic",
    params: ["count", "price", "paid"],
    phrasings: [
      "{@person} buys {count} apples at ${price} each and pays with a ${paid} bill. How much change does {@person} get, in dollars?",
      "A notebook costs ${price}. {@person} takes {count} of them to the till and hands over ${paid}. What change comes back?",
      "With ${paid} in hand, {@person} purchases {count} pens priced at ${price} apiece. How many dollars are left over?",
      "Each ticket is ${price}. If {@person} gets {count} tickets and gives the cashier ${paid}, find the change in dollars.",
      "Paying ${paid} for {count} muffins that sell for ${price} per muffin, how much money should {@person} receive back?",
    ],
    method: "The change is the amount paid minus the cost, count times price.",
    program: "print(round(paid - count * price, 2))",
    sample(rng) {
      const count = rng.int(2, 12);
      const price = rng.int(5, 300) / 100;
      const paid = Math.ceil((count * price) / 5) * 5 + 5 * rng.int(0, 3);
      return { count, price, paid };
    },
    answer: (p) =>
      String(Math.round(((p.paid as number) - (p.count as number) * (p.price as number)) * 100) / 100),
  },
  {
    id: "percent-discount-price",
    domain: "arithmetic",
    params: ["price", "pct"],
    phrasings: [
      "A jacket costs ${price}. The shop takes {pct}% off. What is the sale price in dollars?",
      "{@person} sees a bike marked ${price} with a {pct}% discount. How much does {@person} pay after the discount?",
      "During a sale, everything is {pct}% off. What does a lamp that normally sells for ${price} cost now?",
      "Find the price of a ${price} pair of shoes after a discount of {pct}%.",
      "A coupon gives {pct}% off the ${price} price of a video game. How many dollars does the game cost with the coupon?",
      "The regular price of a tent is ${price}, and this week it is reduced by {pct}%. What is the new price?",
    ],
    method: "The sale price is the price times one minus the discount percent over a hundred.",
    program: "print(round(price * (100 - pct) / 100, 2))",
    sample(rng) {
      return { price: rng.int(8, 400), pct: 5 * rng.int(1, 14) };
    },
    answer: (p) => String(((p.price as number) * (100 - (p.pct as number))) / 100),
  },
  {
    id: "unit-price-savings",
    domain: "arithmetic",
    params: ["n1", "p1", "n2", "p2"],
    phrasings: [
      "Store A sells {n1} cans of soup for ${p1}. Store B sells {n2} cans for ${p2}. How much cheaper per can, in dollars, is the better deal?",
      "A pack of {n1} batteries costs ${p1} and a pack of {n2} batteries costs ${p2}. By how many dollars per battery do the two packs differ?",
      "{@person} compares two bags of oranges: {n1} oranges for ${p1}, or {n2} oranges for ${p2}. How much is saved on each orange by picking the lower unit price?",
      "One box holds {n1} granola bars and sells for ${p1}; another holds {n2} bars for ${p2}. What is the difference in price per bar?",
      "Find the difference between the cost per pencil of {n1} pencils for ${p1} and of {n2} pencils for ${p2}.",
      "Yogurt comes in a {n1}-pack priced ${p1} and a {n2}-pack priced ${p2}. Per cup, how much less does the cheaper option cost?",
    ],
    method: "Divide each price by its count to get unit prices, then subtract the smaller from the larger.",
    program: "print(round(abs(p1 / n1 - p2 / n2), 2))",
    sample(rng) {
      const n1 = rng.int(2, 12);
      let n2 = rng.int(2, 12);
      while (n2 === n1) n2 = rng.int(2, 12);
      const u1 = rng.int(20, 250);
      let u2 = rng.int(20, 250);
      while (u2 === u1) u2 = rng.int(20, 250);
      return { n1, p1: (n1 * u1) / 100, n2, p2: (n2 * u2) / 100 };
    },
    answer: (p) =>
      String(
        Math.abs(
          Math.round(((p.p1 as number) * 100) / (p.n1 as number)) -
            Math.round(((p.p2 as number) * 100) / (p.n2 as number)),
        ) / 100,
      ),
  },
  {
    id: "share-equally-remainder",
    domain: "arithmetic",
    params: ["total", "k"],
    phrasings: [
      "{@person} has {total} stickers and shares them equally among {k} friends, giving each as many as possible. How many stickers are left over?",
      "A teacher splits {total} pencils evenly between {k} tables. After every table gets the same number, how many pencils remain?",
      "There are {k} children and {total} sweets. If each child gets the same whole number of sweets and as many as possible, how many sweets are not given out?",
      "{total} eggs are packed into {k} boxes, the same number in every box and as many as possible. How many eggs are left over?",
      "A baker puts {total} cookies onto {k} plates, the same number on each plate and as many as possible. How many cookies are left?",
      "When {total} cards are dealt out evenly to {k} players, with each player getting the greatest equal share, how many cards are left undealt?",
    ],
    method: "The leftover is the remainder when the total is divided by the number of groups.",
    program: "print(total % k)",
    sample(rng) {
      const k = rng.int(3, 12);
      return { total: k * rng.int(3, 40) + rng.int(1, k - 1), k };
    },
    answer: (p) => String((p.total as number) % (p.k as number)),
  },
  {
    id: "mean-of-four-values",
    domain: "arithmetic",
    params: ["a", "b", "c", "d"],
    phrasings: [
      "{@person} scored {a}, {b}, {c} and {d} on four tests. What is the average score?",
      "The temperatures over four days were {a}, {b}, {c} and {d} degrees. Find their mean.",
      "Four friends have {a}, {b}, {c} and {d} dollars. If they pooled the money and split it equally, how much would each have?",
      "What is the mean of the numbers {a}, {b}, {c} and {d}?",
      "A runner's four laps took {a}, {b}, {c} and {d} seconds. What was the average lap time in seconds?",
      "Over four weeks a shop sold {a}, {b}, {c} and then {d} bikes. On average, how many bikes were sold per week?",
    ],
    method: "The average is the sum of the four values divided by four.",
    program: "print(round((a + b + c + d) / 4, 2))",
    sample(rng) {
      return { a: rng.int(10, 99), b: rng.int(10, 99), c: rng.int(10, 99), d: rng.int(10, 99) };
    },
    answer: (p) => String(((p.a as number) + (p.b as number) + (p.c as number) + (p.d as number)) / 4),
  },
  {
    id: "simple-interest",
    domain: "arithmetic",
    params: ["principal", "rate", "years"],
    phrasings: [
      "{@person} deposits ${principal} in an account that pays {rate}% simple interest per year. How much interest is earned after {years} years?",
      "How much simple interest does a loan of ${principal} charge over {years} years at {rate}% a year?",
      "A bond of ${principal} earns simple interest at an annual rate of {rate}%. What is the interest, in dollars, after {years} years?",
      "Find the simple interest on ${principal} invested for {years} years at a yearly rate of {rate}%.",
      "At {rate}% simple interest per annum, how many dollars of interest does ${principal} earn in {years} years?",
      "{@person} borrows ${principal} for {years} years. The bank charges simple interest of {rate}% each year. How much interest does {@person} owe in total?",
    ],
    method: "Simple interest is principal times rate over a hundred times the number of years.",
    program: "print(round(principal * rate * years / 100, 2))",
    sample(rng) {
      return { principal: 100 * rng.int(2, 100), rate: rng.int(1, 12), years: rng.int(1, 10) };
    },
    answer: (p) => String(((p.principal as number) * (p.rate as number) * (p.years as number)) / 100),
  },
  {
    id: "ratio-split-share",
    domain: "arithmetic",
    params: ["total", "a", "b"],
    phrasings: [
      "{@person} and {@person2} share ${total} in the ratio {a} to {b}. How much does {@person} get?",
      "Split {total} marbles between {@person} and {@person2} in the ratio {a}:{b}. How many marbles does {@person} receive?",
      "The ratio of boys to girls in a club is {a} to {b}, and there are {total} members. How many boys are there?",
      "A prize of ${total} is divided so that {@person}'s part and {@person2}'s part are in the ratio {a} to {b}. What is {@person}'s part, in dollars?",
      "Red and blue beads are in the ratio {a} to {b}. If a necklace has {total} beads of these two colours, how many are red?",
      "Mix paint and water in the ratio {a} to {b} to make {total} litres. How many litres of paint are needed?",
    ],
    method: "The first share is the total times the first part over the sum of both parts.",
    program: "print(total * a // (a + b))",
    sample(rng) {
      const a = rng.int(1, 9);
      const b = rng.int(1, 9);
      return { total: (a + b) * rng.int(2, 60), a, b };
    },
    answer: (p) => String(((p.total as number) * (p.a as number)) / ((p.a as number) + (p.b as number))),
  },
  {
    id: "order-of-operations-story",
    domain: "arithmetic",
    params: ["start", "bags", "each", "away"],
    phrasings: [
      "{@person} has {start} marbles, buys {bags} bags with {each} marbles in each, then gives {away} marbles to a friend. How many marbles does {@person} have now?",
      "A library owns {start} books. It receives {bags} boxes of {each} books and then throws away {away} damaged ones. How many books does it have?",
      "Start with {start}, add {bags} groups of {each}, and subtract {away}. What is the result?",
      "There are {start} chairs in a hall. Workers bring in {bags} stacks of {each} chairs, and {away} chairs are taken to another room. How many chairs are in the hall?",
      "{@person} had {start} stamps. After getting {bags} packs holding {each} stamps apiece and losing {away} stamps, how many stamps are left?",
      "A farmer gives away {away} eggs from a store of {start} eggs, after collecting {bags} baskets of {each} eggs. How many eggs does the farmer end up with?",
    ],
    method: "Multiply the groups by their size, add the starting amount, then subtract what was removed.",
    program: "print(start + bags * each - away)",
    sample(rng) {
      const start = rng.int(5, 200);
      const bags = rng.int(2, 12);
      const each = rng.int(2, 25);
      return { start, bags, each, away: rng.int(1, start + bags * each - 1) };
    },
    answer: (p) => String((p.start as number) + (p.bags as number) * (p.each as number) - (p.away as number)),
  },
];
