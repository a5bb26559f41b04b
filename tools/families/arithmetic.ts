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
];
