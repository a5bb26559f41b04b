/** units families. */
import type { Family } from "./family.js";

export const UNITS: Family[] = [
  {
    id: "metres-to-cm-pieces",
    domain: "units",
    params: ["metres", "cm"],
    phrasings: [
      "A ribbon is {metres} m long. {@person} cuts it into pieces that are each {cm} cm long. How many full pieces can be cut?",
      "How many {cm} cm strips can be cut from a {metres} metre roll of tape?",
      "{@person} has a rope of {metres} metres and needs lengths of {cm} centimetres. How many complete lengths can {@person} get?",
      "A plank {metres} m long is sawn into shelves of {cm} cm each. How many whole shelves does it make?",
      "Each bracelet uses {cm} cm of cord. How many bracelets can be made from {metres} m of cord?",
      "From a {metres}-metre length of fabric, how many full pieces measuring {cm} centimetres can be cut?",
    ],
    method:
      "Convert metres to centimetres by multiplying by a hundred, then divide by the piece length and drop the remainder.",
    program: "print(metres * 100 // cm)",
    sample(rng) {
      return { metres: rng.int(2, 60), cm: rng.int(7, 95) };
    },
    answer: (p) => String(Math.floor(((p.metres as number) * 100) / (p.cm as number))),
  },
  {
    id: "grams-total-to-kg",
    domain: "units",
    params: ["count", "grams"],
    phrasings: [
      "{@person} buys {count} bags of flour that weigh {grams} g each. What is the total weight in kilograms?",
      "A crate holds {count} tins, each with a mass of {grams} grams. How many kilograms do the tins weigh together?",
      "Each apple weighs {grams} g. What is the mass, in kg, of {count} apples?",
      "Find the total mass in kilograms of {count} parcels weighing {grams} grams apiece.",
      "A baker uses {grams} g of butter for one cake. How many kilograms of butter are needed for {count} cakes?",
      "If one book has a mass of {grams} grams, how heavy in kilograms is a stack of {count} such books?",
    ],
    method: "Multiply the count by the grams each, then divide by a thousand to get kilograms.",
    program: "print(round(count * grams / 1000, 3))",
    sample(rng) {
      return { count: rng.int(2, 40), grams: 5 * rng.int(10, 180) };
    },
    answer: (p) => String(((p.count as number) * (p.grams as number)) / 1000),
  },
  {
    id: "per-minute-rate-over-hours",
    domain: "units",
    params: ["rate", "hours"],
    phrasings: [
      "A machine fills {rate} bottles every minute. How many bottles does it fill in {hours} hours?",
      "{@person}'s printer prints {rate} pages per minute. How many pages can it print in {hours} hours of non-stop work?",
      "In {hours} hours, how many loaves does an oven line make if it turns out {rate} loaves a minute?",
      "A conveyor belt carries {rate} boxes per minute. Find the number of boxes it carries in {hours} hours.",
      "Water drips into a bucket at {rate} drops each minute. How many drops fall in {hours} hours?",
      "Running for {hours} hours at a steady {rate} cans per minute, how many cans does a factory line seal?",
    ],
    method: "Convert hours to minutes by multiplying by sixty, then multiply by the rate per minute.",
    program: "print(rate * hours * 60)",
    sample(rng) {
      return { rate: rng.int(2, 90), hours: rng.int(2, 12) };
    },
    answer: (p) => String((p.rate as number) * (p.hours as number) * 60),
  },
  {
    id: "litres-minus-ml-poured",
    domain: "units",
    params: ["litres", "glasses", "ml"],
    phrasings: [
      "A jug holds {litres} litres of juice. {@person} pours {glasses} glasses of {ml} ml each. How many millilitres of juice are left in the jug?",
      "A water cooler starts with {litres} L. After {glasses} cups of {ml} mL are taken, how much water remains, in mL?",
      "{@person} fills {glasses} bottles with {ml} ml of milk each from a {litres} litre container. How many millilitres of milk are still in the container?",
      "From a {litres} litre tank, {glasses} buckets holding {ml} millilitres apiece are drawn. What amount, in millilitres, stays in the tank?",
      "Each serving of soup is {ml} ml. A pot contains {litres} litres and {glasses} servings are ladled out. How many ml of soup are left?",
      "How many millilitres of lemonade remain when {glasses} cups, each holding {ml} ml, are served from a {litres}-litre pitcher?",
    ],
    method:
      "Convert litres to millilitres by multiplying by a thousand, then subtract the glasses times their size.",
    program: "print(litres * 1000 - glasses * ml)",
    sample(rng) {
      const litres = rng.int(2, 20);
      const ml = 10 * rng.int(10, 50);
      const glasses = rng.int(1, Math.floor((litres * 1000 - 1) / ml));
      return { litres, glasses, ml };
    },
    answer: (p) => String((p.litres as number) * 1000 - (p.glasses as number) * (p.ml as number)),
  },
  {
    id: "kmh-to-metres-per-second",
    domain: "units",
    params: ["kmh"],
    phrasings: [
      "A car is moving at {kmh} km/h. What is its speed in metres per second?",
      "Convert a speed of {kmh} kilometres per hour into metres per second.",
      "{@person} cycles at {kmh} km per hour. How many metres does {@person} cover each second?",
      "A train's speed is {kmh} km/h. Express this speed in m/s.",
      "How many metres per second is {kmh} kilometres an hour?",
      "The speed limit on a road is {kmh} kilometres per hour. What is that in metres per second?",
    ],
    method:
      "Multiply by a thousand metres per kilometre and divide by the three thousand six hundred seconds in an hour.",
    program: "print(round(kmh * 1000 / 3600, 2))",
    sample(rng) {
      return { kmh: 9 * rng.int(1, 30) };
    },
    answer: (p) => String(((p.kmh as number) * 1000) / 3600),
  },
  {
    id: "celsius-to-fahrenheit",
    domain: "units",
    params: ["c"],
    phrasings: [
      "The temperature outside is {c} degrees Celsius. What is it in degrees Fahrenheit?",
      "Convert {c} degrees Celsius to Fahrenheit.",
      "A recipe says to heat the oil to {c} degrees Celsius. What temperature is that on the Fahrenheit scale?",
      "{@person}'s thermometer reads {c} degrees C. What would a Fahrenheit thermometer show?",
      "Water in a pool is at {c} degrees Celsius. How many degrees Fahrenheit is that?",
      "If a weather report gives {c} degrees Celsius, what is the same temperature in Fahrenheit?",
    ],
    method: "Fahrenheit is Celsius times nine fifths plus thirty-two.",
    program: "print(c * 9 // 5 + 32)",
    sample(rng) {
      return { c: 5 * rng.int(0, 40) };
    },
    answer: (p) => String(((p.c as number) * 9) / 5 + 32),
  },
  {
    id: "kilocalories-to-kilojoules",
    domain: "units",
    params: ["kcal"],
    phrasings: [
      "A snack bar contains {kcal} kilocalories. How many kilojoules is that?",
      "Convert {kcal} kcal into kilojoules.",
      "{@person} burns {kcal} kilocalories on a run. Express this energy in kJ.",
      "A meal provides {kcal} kcal of energy. What is its energy in kilojoules?",
      "How many kilojoules are there in {kcal} kilocalories?",
      "The label on a drink says it has {kcal} kilocalories. What would the label show in kilojoules?",
    ],
    method: "One kilocalorie is four point one eight four kilojoules, so multiply by that.",
    program: "print(round(kcal * 4.184, 3))",
    sample(rng) {
      return { kcal: rng.int(20, 2500) };
    },
    answer: (p) => String(((p.kcal as number) * 4184) / 1000),
  },
];
