/**
 * Near misses (issue 16): a query with the numbers of a library problem that asks for something
 * else must not be routed to it. Each pair below has the same numbers and was routed by the router
 * before these checks (`differences` found nothing); each distinction is shown with a re-wording
 * the same check lets through, so the check is about the question's role, not about new words.
 */
import { describe, expect, it } from "vitest";
import { analyzeProblem, differences, sameNumbers } from "../edge/routing/problem-structure.js";
import { normalizeProblem } from "../shared/normalize.js";

const structure = (text: string) => analyzeProblem(normalizeProblem(text));

/** `differences` of a query and a library problem that state the same numbers. */
function compare(query: string, library: string) {
  const a = structure(query);
  const b = structure(library);
  expect(sameNumbers(a.numbers, b.numbers)).toBe(true);
  return differences(a, b);
}

describe("near misses: the question asks for something else", () => {
  it.each([
    [
      "a negated question (the complement)",
      "How many integers from 200 to 600 inclusive are not multiples of 9?",
      "How many integers from 200 to 600 inclusive are multiples of 9?",
    ],
    [
      "the other member of a pair of alternatives (still water vs the current)",
      "A ferry goes 48 km downstream in 3 hours and 48 km upstream in 4 hours. What is the ferry's speed in still water in km/h?",
      "A ferry goes 48 km downstream in 3 hours and 48 km upstream in 4 hours. What is the speed of the current in km/h?",
    ],
    [
      "the exterior instead of the interior angle",
      "What is the measure of each exterior angle of a regular polygon with 10 sides, in degrees?",
      "What is the measure of each interior angle of a regular polygon with 10 sides, in degrees?",
    ],
    [
      "asked and given swapped (the dimes vs the quarters)",
      "A purse holds 20 coins, all dimes and quarters, worth $3.50. How many quarters are in the purse?",
      "A purse holds 20 coins, all dimes and quarters, worth $3.50. How many dimes are in the purse?",
    ],
    [
      "asked and given swapped (the brother vs Ana)",
      "Ana is 6 years older than her brother. Their ages add up to 30. How old is her brother?",
      "Ana is 6 years older than her brother. Their ages add up to 30. How old is Ana?",
    ],
    [
      "one number counting other things (2 boys vs 2 girls)",
      "From 7 boys and 4 girls, how many teams of 5 can be formed with exactly 2 boys?",
      "From 7 boys and 4 girls, how many teams of 5 can be formed with exactly 2 girls?",
    ],
    [
      "one number counting other things (3 days vs 3 painters)",
      "If 5 painters paint a house in 12 days, how many painters are needed to paint it in 3 days?",
      "If 5 painters paint a house in 12 days, how many days would 3 painters need to paint it?",
    ],
    [
      "the same data with another question (the gaps vs the posts)",
      "A straight fence 90 m long has a post every 5 m, including a post at each end. How many gaps are there between posts?",
      "A straight fence 90 m long has a post every 5 m, including a post at each end. How many posts are there?",
    ],
    [
      "the same data with another question (the discount vs the original price)",
      "After a 30% discount, a lamp sells for $42. How much was the discount, in dollars?",
      "After a 30% discount, a lamp sells for $42. What was the original price, in dollars?",
    ],
    [
      "counting back in time",
      "Ines is 40 years old and her son is 10. How many years ago was Ines 7 times as old as her son?",
      "Ines is 40 years old and her son is 10. In how many years will Ines be 7 times as old as her son?",
    ],
    [
      "an asked-for quantity the other does not name (the midpoint vs the distance)",
      "What is the midpoint of the segment from (2, 4) to (8, 12)?",
      "What is the distance from (2, 4) to (8, 12)?",
    ],
    [
      "an asked-for quantity the other does not name (cubes vs squares)",
      "What is the sum of the cubes of the first 12 positive integers?",
      "What is the sum of the squares of the first 12 positive integers?",
    ],
    [
      "an asked-for quantity the other does not name (an angle vs a height)",
      "A 10 m ladder leans against a wall with its foot 6 m from the wall. What angle does the ladder make with the ground?",
      "A 10 m ladder leans against a wall with its foot 6 m from the wall. How high up the wall does it reach?",
    ],
    [
      "a parity the other lacks",
      "The sum of 4 consecutive odd integers is 80. What is the smallest of them?",
      "The sum of 4 consecutive integers is 80. What is the smallest of them?",
    ],
    [
      "a relation's direction reversed",
      "Ana is 6 years younger than her brother. Their ages add up to 30. How old is Ana?",
      "Ana is 6 years older than her brother. Their ages add up to 30. How old is Ana?",
    ],
    [
      "a markup for a discount",
      "After a 30% markup, a lamp sells for $42. What was the original price, in dollars?",
      "After a 30% discount, a lamp sells for $42. What was the original price, in dollars?",
    ],
  ])("%s", (_, query, library) => {
    expect(compare(query, library)).not.toBeNull();
  });
});

describe("re-wordings the same checks let through", () => {
  it.each([
    [
      "negated both ways (`isn't`, `not`)",
      "A box has 3 red, 4 green and 5 white balls. One is taken at random. What is the chance that it isn't green?",
      "A box holds 3 red, 4 green and 5 white balls. A ball is drawn at random. What is the probability that it is not green?",
    ],
    [
      "the question's data restated in the question",
      "A purse holds 20 coins, all dimes and quarters, worth $3.50. How many dimes does the purse with the quarters hold?",
      "A purse holds 20 coins, all dimes and quarters, worth $3.50. How many dimes are in the purse?",
    ],
    [
      "numbers counting the same things, other words around them",
      "Five painters need 12 days for a house. At that rate, how long would 3 painters take, in days?",
      "If 5 painters paint a house in 12 days, how many days would 3 painters need to paint it?",
    ],
    [
      "other data words with the same question",
      "How far apart are the points (2, 4) and (8, 12)?",
      "What is the distance from (2, 4) to (8, 12)?",
    ],
    [
      "area units are not the `square` of a number",
      "A 9 m by 4 m rug lies on a floor. Find the area of the rug.",
      "A rug is 9 m long and 4 m wide. What is its area in square meters?",
    ],
  ])("%s", (_, query, library) => {
    expect(compare(query, library)).toBeNull();
  });
});
