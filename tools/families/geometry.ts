/** geometry families: areas, perimeters, circles, right triangles, angles and volumes. */
import type { Family } from "./family.js";

const num = (x: number | undefined) => x as number;

/** `x` rounded to two decimals as Python's round(x, 2) prints it (the samplers avoid exact ties). */
const round2 = (x: number) => String(Math.round(x * 100) / 100);

export const GEOMETRY: Family[] = [
  {
    id: "rectangle-area",
    domain: "geometry",
    params: ["length", "width"],
    phrasings: [
      "A rectangle is {length} cm long and {width} cm wide. What is its area in square centimetres?",
      "{@person}'s garden is a rectangle measuring {width} m by {length} m. How many square metres of grass does it have?",
      "Find the area of a rectangular rug whose sides are {length} feet and {width} feet.",
      "A rectangular poster has a width of {width} inches and a height of {length} inches. How much wall area does it cover, in square inches?",
      "How many square tiles, each one metre on a side, are needed to cover a rectangular floor {length} m long and {width} m wide?",
      "The floor of a storage room is a rectangle, {length} metres by {width} metres. What is its area?",
    ],
    method: "The area of a rectangle is its length times its width.",
    program: "print(length * width)",
    sample: (rng) => ({ length: rng.int(3, 60), width: rng.int(2, 40) }),
    answer: (p) => String(num(p.length) * num(p.width)),
  },
  {
    id: "rectangle-perimeter",
    domain: "geometry",
    params: ["length", "width"],
    phrasings: [
      "What is the perimeter of a rectangle that is {length} cm long and {width} cm wide?",
      "{@person} puts a fence around a rectangular field measuring {length} m by {width} m. How many metres of fencing are needed?",
      "A rectangular picture is {width} inches wide and {length} inches tall. How much ribbon goes once around its edge?",
      "Find the distance around a rectangular park with sides of {length} metres and {width} metres.",
      "A rectangular table top is {length} dm by {width} dm. {@person} glues trim along all four edges. What length of trim is used, in dm?",
      "Walking once around the edge of a rectangular pool that is {length} metres long and {width} metres wide, how far does {@person} walk?",
    ],
    method: "The perimeter is twice the sum of the length and the width.",
    program: "print(2 * (length + width))",
    sample: (rng) => ({ length: rng.int(3, 90), width: rng.int(2, 60) }),
    answer: (p) => String(2 * (num(p.length) + num(p.width))),
  },
  {
    id: "triangle-area-base-height",
    domain: "geometry",
    params: ["base", "height"],
    phrasings: [
      "A triangle has a base of {base} cm and a height of {height} cm. What is its area in square centimetres?",
      "Find the area of a triangular sail whose height is {height} m and whose base is {base} m.",
      "{@person} cuts a triangle out of card. Its base is {base} inches and its height to that base is {height} inches. What area of card is the triangle?",
      "The gable of a house is a triangle {base} feet wide at the bottom and {height} feet tall. How many square feet does it cover?",
      "What is the area of a triangle with height {height} units drawn to a base of {base} units?",
      "A triangular garden bed has a base of {base} metres and a perpendicular height of {height} metres. How big is its area?",
    ],
    method: "The area of a triangle is half of the base times the height.",
    program: "print(base * height / 2)",
    sample: (rng) => ({ base: rng.int(3, 40), height: rng.int(2, 30) }),
    answer: (p) => String((num(p.base) * num(p.height)) / 2),
  },
  {
    id: "circle-area-from-radius",
    domain: "geometry",
    params: ["r"],
    phrasings: [
      "A circle has a radius of {r} cm. What is its area, rounded to two decimal places?",
      "{@person} draws a circle with radius {r} inches. Find its area in square inches to the nearest hundredth.",
      "A round table top has a radius of {r} dm. How much surface does it have, in square decimetres, rounded to two decimals?",
      "Find the area of a circular pond whose radius is {r} metres, correct to two decimal places.",
      "A sprinkler waters every point within {r} m of it. What area of lawn does it water, to the nearest hundredth of a square metre?",
      "What is the area of a circular pizza with a radius of {r} inches? Round to two decimal places.",
    ],
    method: "The area of a circle is pi times the radius squared.",
    program: "import math\nprint(round(math.pi * r * r, 2))",
    sample: (rng) => ({ r: rng.int(1, 40) }),
    answer: (p) => round2(Math.PI * num(p.r) * num(p.r)),
  },
  {
    id: "circle-circumference-from-diameter",
    domain: "geometry",
    params: ["d"],
    phrasings: [
      "A circle has a diameter of {d} cm. What is its circumference, rounded to two decimal places?",
      "{@person}'s bicycle wheel is {d} inches across. How far does it roll in one full turn, to the nearest hundredth of an inch?",
      "Find the distance around a circular running track with a diameter of {d} metres, correct to two decimals.",
      "A round cake is {d} cm wide. How long a ribbon is needed to go once around it? Round to two decimal places.",
      "What length of fence encloses a circular pen whose diameter is {d} m? Give the answer to two decimal places.",
      "The diameter of a round clock face is {d} cm. What is the length of its rim, to the nearest hundredth?",
    ],
    method: "The circumference of a circle is pi times the diameter.",
    program: "import math\nprint(round(math.pi * d, 2))",
    sample: (rng) => ({ d: rng.int(2, 120) }),
    answer: (p) => round2(Math.PI * num(p.d)),
  },
  {
    id: "right-triangle-hypotenuse",
    domain: "geometry",
    params: ["a", "b"],
    phrasings: [
      "A right triangle has legs of {a} cm and {b} cm. How long is its hypotenuse?",
      "A ladder reaches {b} m up a wall, and its foot is {a} m from the wall. How long is the ladder?",
      "{@person} walks {a} km east and then {b} km north. How far is {@person} from the starting point in a straight line?",
      "A rectangular field is {a} m wide and {b} m long. How long is the path that cuts diagonally across it?",
      "Find the longest side of a right-angled triangle whose two shorter sides are {b} units and {a} units.",
      "A kite string is pegged to the ground {a} m from the point right under the kite, which flies {b} m high. If the string is straight, how long is it?",
    ],
    method: "By Pythagoras, the hypotenuse is the square root of the sum of the squares of the legs.",
    program: "import math\nprint(math.isqrt(a * a + b * b))",
    sample(rng) {
      // Euclid's formula with m > n gives a Pythagorean triple; scale it by k.
      const m = rng.int(2, 7);
      const n = rng.int(1, m - 1);
      const k = rng.int(1, Math.max(1, Math.floor(60 / (m * m + n * n))));
      const x = k * (m * m - n * n);
      const y = k * 2 * m * n;
      return rng.next() < 0.5 ? { a: x, b: y } : { a: y, b: x };
    },
    answer: (p) => String(Math.round(Math.sqrt(num(p.a) ** 2 + num(p.b) ** 2))),
  },
  {
    id: "triangle-third-angle",
    domain: "geometry",
    params: ["a", "b"],
    phrasings: [
      "Two angles of a triangle measure {a} degrees and {b} degrees. What is the third angle, in degrees?",
      "In triangle PQR, angle P is {a} degrees and angle Q is {b} degrees. Find angle R.",
      "{@person} measures two corners of a triangular plot as {b} degrees and {a} degrees. How many degrees is the remaining corner?",
      "A triangle has one angle of {a} degrees and another of {b} degrees. How large is its last angle?",
      "Find the missing angle of a triangle whose other angles are {a} degrees and {b} degrees.",
      "The angles of a triangle include one of {a} degrees and one of {b} degrees. What does the third one measure?",
    ],
    method:
      "The angles of a triangle add up to one hundred eighty degrees, so subtract the two known angles from it.",
    program: "print(180 - a - b)",
    sample(rng) {
      const a = rng.int(20, 120);
      const b = rng.int(10, 170 - a);
      return { a, b };
    },
    answer: (p) => String(180 - num(p.a) - num(p.b)),
  },
  {
    id: "cylinder-volume",
    domain: "geometry",
    params: ["r", "h"],
    phrasings: [
      "A cylinder has a radius of {r} cm and a height of {h} cm. What is its volume in cubic centimetres, rounded to two decimal places?",
      "A round water tank is {h} m tall and its base has a radius of {r} m. How many cubic metres of water does it hold, to the nearest hundredth?",
      "{@person} has a can with a base radius of {r} inches and a height of {h} inches. Find its volume to two decimal places.",
      "What is the volume of a cylindrical pillar {h} feet high with a radius of {r} feet? Round to two decimals.",
      "Find the capacity of a cylindrical jar whose height is {h} cm and whose radius is {r} cm, correct to two decimal places.",
      "A drum shaped like a cylinder has a radius of {r} dm and stands {h} dm tall. How much space is inside it, in cubic decimetres, rounded to two decimal places?",
    ],
    method: "The volume of a cylinder is pi times the radius squared times the height.",
    program: "import math\nprint(round(math.pi * r * r * h, 2))",
    sample: (rng) => ({ r: rng.int(1, 20), h: rng.int(2, 40) }),
    answer: (p) => round2(Math.PI * num(p.r) * num(p.r) * num(p.h)),
  },
];
