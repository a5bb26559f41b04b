/** time families. */
import type { Family } from "./family.js";

export const TIME: Family[] = [
  {
    id: "elapsed-minutes-between-times",
    domain: "time",
    params: ["h1", "m1", "h2", "m2"],
    phrasings: [
      "A film starts at {m1} minutes past {h1} o'clock and ends at {m2} minutes past {h2} o'clock on the same day, using the twenty-four-hour clock. How many minutes long is the film?",
      "{@person} leaves home at {h1} hours {m1} minutes and gets back at {h2} hours {m2} minutes the same day (twenty-four-hour clock). How many minutes was {@person} away?",
      "On a twenty-four-hour clock, a train departs at {h1} h {m1} min and arrives at {h2} h {m2} min. How long is the journey in minutes?",
      "How many minutes pass between {m1} minutes after hour {h1} and {m2} minutes after hour {h2} of the same day?",
      "A shop opens at {m1} minutes past {h1} and closes at {m2} minutes past {h2}, on a twenty-four-hour clock. For how many minutes is it open?",
      "A bus ride begins when the twenty-four-hour clock shows hour {h1} and minute {m1}, and ends at hour {h2} and minute {m2}. Find the length of the ride in minutes.",
    ],
    method: "Turn both times into minutes after midnight (hours times sixty plus minutes) and subtract.",
    program: "print(h2 * 60 + m2 - (h1 * 60 + m1))",
    sample(rng) {
      const h1 = rng.int(6, 14);
      const m1 = rng.int(1, 59);
      const h2 = rng.int(h1 + 1, 22);
      const m2 = rng.int(1, 59);
      return { h1, m1, h2, m2 };
    },
    answer: (p) =>
      String((p.h2 as number) * 60 + (p.m2 as number) - ((p.h1 as number) * 60 + (p.m1 as number))),
  },
  {
    id: "arrival-hour-24-clock",
    domain: "time",
    params: ["start", "duration"],
    phrasings: [
      "A flight leaves at {start} o'clock on the twenty-four-hour clock and takes {duration} hours. At what hour on the twenty-four-hour clock does it land?",
      "{@person} sets off at hour {start} (twenty-four-hour clock) on a trip lasting {duration} hours. What hour does the clock show on arrival?",
      "A ship's voyage lasts {duration} hours. It sails when the twenty-four-hour clock shows hour {start}. At what hour does it arrive?",
      "It is {start} o'clock on a twenty-four-hour clock. What hour will it show {duration} hours from now?",
      "A bread dough is put to rise at {start} o'clock (twenty-four-hour time) and must rest for {duration} hours. At what hour of the twenty-four-hour clock is it ready?",
      "Starting at hour {start} of the day on a twenty-four-hour clock, a night bus drives for {duration} hours. What hour is it when the bus reaches its stop?",
    ],
    method: "Add the duration to the start hour and take the remainder on division by twenty-four.",
    program: "print((start + duration) % 24)",
    sample(rng) {
      return { start: rng.int(1, 23), duration: rng.int(1, 40) };
    },
    answer: (p) => String(((p.start as number) + (p.duration as number)) % 24),
  },
  {
    id: "weeks-and-days-to-days",
    domain: "time",
    params: ["weeks", "days"],
    phrasings: [
      "A summer camp lasts {weeks} weeks and {days} days. How many days is that in total?",
      "{@person} spent {weeks} weeks and {days} days travelling. How many days did the trip take?",
      "How many days are there in {weeks} weeks plus {days} days?",
      "A plant needs {weeks} weeks and another {days} days to flower. Give the time in days.",
      "Express {weeks} weeks {days} days as a number of days.",
      "A baby is {weeks} weeks and {days} days old. How old is the baby in days?",
    ],
    method: "Multiply the weeks by seven and add the extra days.",
    program: "print(weeks * 7 + days)",
    sample(rng) {
      return { weeks: rng.int(1, 52), days: rng.int(1, 6) };
    },
    answer: (p) => String((p.weeks as number) * 7 + (p.days as number)),
  },
  {
    id: "travel-time-from-speed",
    domain: "time",
    params: ["distance", "speed"],
    phrasings: [
      "A car travels {distance} km at a steady {speed} km/h. How many minutes does the trip take?",
      "{@person} rides a train for {distance} kilometres at {speed} kilometres per hour. How long is the ride, in minutes?",
      "At {speed} km/h, how many minutes are needed to cover {distance} km?",
      "A cyclist keeps a speed of {speed} km per hour. Find the time in minutes to ride {distance} km.",
      "How long, in minutes, does a bus moving at {speed} kilometres an hour take to go {distance} kilometres?",
      "The distance between two towns is {distance} km. Driving at an average of {speed} km/h, how many minutes does {@person} spend on the road?",
    ],
    method: "Time in hours is distance over speed; multiply by sixty for minutes.",
    program: "print(distance * 60 // speed)",
    sample(rng) {
      const speed = 10 * rng.int(2, 12);
      const minutes = 6 * rng.int(2, 60);
      return { distance: (speed * minutes) / 60, speed };
    },
    answer: (p) => String(((p.distance as number) * 60) / (p.speed as number)),
  },
  {
    id: "work-rate-together",
    domain: "time",
    params: ["a", "b"],
    phrasings: [
      "{@person} can paint a fence in {a} hours, and {@person2} can paint it in {b} hours. Working together, how many hours do they take?",
      "One pipe fills a tank in {a} hours and a second pipe fills it in {b} hours. How many hours does it take with both pipes open?",
      "Working alone, {@person} mows a lawn in {a} hours; {@person2} needs {b} hours. How long would they take if they mow it together?",
      "A machine finishes a job in {a} hours and a newer machine does the same job in {b} hours. If both run at once, in how many hours is the job done?",
      "{@person2} takes {b} hours to wash all the dishes and {@person} takes {a} hours. Together, how many hours does the washing take?",
      "Two printers can each print a batch alone, the first in {a} hours and the second in {b} hours. How many hours do they need if they share the batch?",
    ],
    method:
      "Add the rates one over each time, then the time together is one over that sum, which is a times b over a plus b.",
    program: "print(a * b / (a + b))",
    sample(rng) {
      for (;;) {
        const a = rng.int(2, 40);
        const b = rng.int(2, 40);
        if (a !== b && (a * b) % (a + b) === 0) return { a, b };
      }
    },
    answer: (p) => String(((p.a as number) * (p.b as number)) / ((p.a as number) + (p.b as number))),
  },
  {
    id: "age-twice-as-old",
    domain: "time",
    params: ["parent", "child"],
    phrasings: [
      "{@person} is {parent} years old and {@person}'s son is {child}. In how many years will {@person} be twice as old as the son?",
      "A mother is {parent} and her daughter is {child} years old. After how many years will the mother's age be double the daughter's?",
      "{@person2} is {child} years old and {@person2}'s aunt is {parent}. How many years from now will the aunt be exactly twice {@person2}'s age?",
      "A teacher is {parent} years old; a student is {child}. In how many years will the teacher be two times as old as the student?",
      "How many years must pass until a {parent}-year-old grandfather is twice as old as his {child}-year-old grandson?",
      "Today {@person} is {child} and {@person}'s father is {parent}. How many years will it be until the father is twice as old as {@person}?",
    ],
    method:
      "In x years the ages are parent plus x and child plus x; setting parent plus x equal to twice child plus x gives x equals parent minus twice child.",
    program: "print(parent - 2 * child)",
    sample(rng) {
      const child = rng.int(2, 20);
      return { parent: 2 * child + rng.int(Math.max(1, 18 - child), 30), child };
    },
    answer: (p) => String((p.parent as number) - 2 * (p.child as number)),
  },
];
