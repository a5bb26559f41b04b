/** A second held-out test set: two phrasings per trained family, written from each family's method and program alone (never seen in training, never tuned on). */
export const FRESH_PHRASINGS: Readonly<Record<string, readonly string[]>> = {
  "change-from-payment": [
    "{@person} buys {count} notebooks at ${price} each and pays with ${paid}. How much change should {@person} get back, to the nearest cent?",
    "Handing the cashier ${paid} for {count} bottles of juice that cost ${price} apiece, how much money does {@person} receive in change? Round to two decimal places.",
  ],
  "unit-price-savings": [
    "A pack of {n1} pens costs ${p1} and a pack of {n2} pens costs ${p2}. By how much do the two packs differ in price per pen, to the nearest cent?",
    "At the market {@person} sees ${p1} asked for a bag of {n1} apples, while the stall next door sells {n2} apples for ${p2}. What is the difference in the cost of a single apple between the two offers, in dollars to two decimal places?",
  ],
  "share-equally-remainder": [
    "{@person} has {total} stickers and shares them equally among {k} friends, giving each friend as many as possible. How many stickers are left over?",
    "Into {k} boxes, putting the same number in each and as many as possible, a baker packs {total} cookies. How many cookies remain unpacked?",
  ],
  "simple-interest": [
    "What is the simple interest earned on ${principal} at {rate}% per year for {years} years? Round to the nearest cent.",
    "{@person} lends a friend ${principal} for {years} years, charging simple interest of {rate} percent a year. How much interest, in dollars to two decimal places, will the friend owe on top of the loan?",
  ],
  "ratio-split-share": [
    "Split {total} dollars between {@person} and {@person2} in the ratio {a} : {b}. How many dollars does {@person} get?",
    "{@person} and {@person2} put money into a business in the ratio {a} : {b} and now split a profit of ${total} in that same ratio. How many dollars is {@person}'s share?",
  ],
  "order-of-operations-story": [
    "{@person} had {start} marbles, then bought {bags} bags with {each} marbles in each, and later gave {away} marbles away. How many marbles does {@person} have now?",
    "A library shelf starts the week with {start} books. Then {bags} boxes arrive holding {each} books apiece, all of which go onto the shelf, and afterwards {away} books are checked out. How many books are on the shelf at the end?",
  ],
  "metres-to-cm-pieces": [
    "A rope is {metres} metres long. How many whole pieces {cm} cm long can be cut from it?",
    "How many complete strips, each {cm} centimetres long, can {@person} cut from a roll of ribbon that measures {metres} m?",
  ],
  "per-minute-rate-over-hours": [
    "A printer prints {rate} pages per minute. How many pages does it print in {hours} hours?",
    "Running non-stop for {hours} hours, a bottling machine fills {rate} bottles every minute. How many bottles does it fill altogether?",
  ],
  "litres-minus-ml-poured": [
    "A jug holds {litres} litres of lemonade. {@person} pours out {glasses} glasses of {ml} ml each. How many millilitres of lemonade are left in the jug?",
    "After serving {glasses} cups of {ml} millilitres each from a tank that started with {litres} L of water, how much water, in millilitres, is still in the tank?",
  ],
  "celsius-to-fahrenheit": [
    "Convert {c} degrees Celsius to degrees Fahrenheit.",
    "The oven dial reads {c} °C. What is that temperature in °F?",
  ],
  "kilocalories-to-kilojoules": [
    "How many kilojoules are in {kcal} kilocalories, using one kilocalorie equals four point one eight four kilojoules?",
    "A day's meal plan provides {kcal} kcal. Express this energy in kJ, taking a kilocalorie to be four point one eight four kilojoules.",
  ],
  "elapsed-minutes-between-times": [
    "A film starts at {m1} minutes past {h1} o'clock and ends at {m2} minutes past {h2} o'clock later the same day, with hours on a twenty-four-hour clock. How many minutes long is the film?",
    "{@person} clocked in when the time was {h1} hours and {m1} minutes and clocked out later that day at {h2} hours and {m2} minutes, on a twenty-four-hour clock. For how many minutes was {@person} at work?",
  ],
  "weeks-and-days-to-days": [
    "How many days are there in {weeks} weeks and {days} days?",
    "{@person}'s holiday lasted {weeks} weeks plus another {days} days. What was its total length in days?",
  ],
  "travel-time-from-speed": [
    "A train travels {distance} km at a steady {speed} km/h. How many minutes does the trip take?",
    "Cycling at {speed} kilometres per hour, how many minutes will {@person} need to cover {distance} kilometres?",
  ],
  "age-twice-as-old": [
    "{@person} is {parent} years old and {@person}'s daughter is {child}. In how many years will {@person} be twice as old as the daughter?",
    "In how many years will a father who is now {parent} be exactly double the age of his child, who is now {child}?",
  ],
  "solve-linear-equation": [
    "Solve for x: {a}x + {b} = {c}.",
    "If {b} more than {a} times a number equals {c}, what is the number?",
  ],
  "consecutive-integers-sum": [
    "What is the least of {k} consecutive integers whose total is {s}?",
    "{@person} adds up {k} whole numbers in a row, each one more than the one before, and gets {s}. Which number did {@person} start with?",
  ],
  "linear-function-value": [
    "If f(x) = {m}x + {b}, what is f({t})?",
    "A plant is {b} cm tall and grows {m} cm each week. How tall, in centimetres, will it be after {t} weeks?",
  ],
  "arithmetic-series-sum": [
    "Find the sum of the first {n} terms of the arithmetic sequence whose first term is {a} and whose common difference is {d}.",
    "{@person} saves ${a} in the first week, and every week after that puts in ${d} more than the week before. How many dollars has {@person} saved in total after {n} weeks?",
  ],
  "geometric-sequence-term": [
    "A geometric sequence begins with {a} and has common ratio {r}. What is term number {n}?",
    "The number of cells in a culture starts at {a} and is multiplied by {r} every hour. If the starting count is entry number one in a list of hourly counts, what is entry number {n}?",
  ],
  "linear-system-two-unknowns": [
    "Two equations hold at once: {a}x + {b}y = {c}, and also {d}x + {e}y = {f}. Give the value of x.",
    "Two equations hold at the same time: {d}x + {e}y = {f}, and also {a}x + {b}y = {c}. Determine the value of x.",
  ],
  "quadratic-roots-sum-product": [
    "Two numbers add up to {s} and multiply to {p}. What is the larger of the two numbers?",
    "A rectangle's length and width together total {s} m, and its area is {p} square metres. What is the larger of its two side lengths, in metres?",
  ],
  "age-multiple-in-years": [
    "Right now {@person} has lived {p} years and {@person2} has lived {c}. After how many more years does {@person}'s age become exactly {k} times {@person2}'s?",
    "A grandmother is {p} and her grandson is {c}. After how many years will her age be exactly {k} times his?",
  ],
  "greatest-common-divisor": [
    "Give the biggest whole number that goes evenly into both {a} and {b}.",
    "{@person} wants to cut two ribbons, {a} cm and {b} cm long, into pieces that all have the same whole-centimetre length, with nothing wasted. What is the longest possible piece length, in centimetres?",
  ],
  "division-remainder": [
    "If you split {n} into groups of {k}, how many are left over that do not make a full group?",
    "Dividing {n} by {k} leaves what remainder?",
  ],
  "count-divisors": [
    "Count the whole numbers that divide {n} exactly, one and the number itself included.",
    "{@person} wants to arrange {n} chairs in equal rows with no chair left over, where a single row or one chair per row also counts. How many different numbers of rows are possible?",
  ],
  "count-multiples-up-to": [
    "How many multiples of {k} are there from one to {n}?",
    "Counting from one up to {n} inclusive, how many of the numbers are divisible by {k}?",
  ],
  "largest-prime-factor": [
    "Break {n} into primes. Which prime in that breakdown is the biggest?",
    "Break {n} down into its prime factors. Which one is the biggest?",
  ],
  "primes-in-range": [
    "Count the primes p with {a} <= p <= {b}.",
    "{@person} writes down every whole number from {a} through {b}. How many of them are prime?",
  ],
  "last-digit-of-power": [
    "What is the last digit of {a}^{n}?",
    "If you multiply together {n} copies of the number {a}, what is the units digit of the product?",
  ],
  "repeating-cycle-position": [
    "A string of lights repeats the same {k} colours in order, and the colours are numbered starting from one. Which colour number is light number {n}?",
    "Every day {@person} reads one chapter of a book with {k} chapters, going back to chapter one after finishing the last. Which chapter does {@person} read on day {n}?",
  ],
  "choose-k-of-n": [
    "In how many ways can {k} books be chosen from a shelf of {n} books if the order does not matter?",
    "From {n} ice-cream flavours, {@person} picks {k} different ones for a sundae. How many different selections are possible?",
  ],
  "handshakes-among-people": [
    "At a meeting of {n} people, everyone shakes hands with everyone else exactly once. How many handshakes take place?",
    "How many games are played in a round-robin tournament of {n} teams in which each pair of teams meets exactly once?",
  ],
  "outfit-combinations": [
    "{@person} has {shirts} shirts, {trousers} pairs of trousers and {shoes} pairs of shoes. How many different outfits of one shirt, one pair of trousers and one pair of shoes can {@person} put together?",
    "Picking one of {shoes} pairs of shoes, one of {trousers} pairs of trousers and one of {shirts} shirts, how many distinct outfits are possible?",
  ],
  "grid-paths": [
    "Moving only east or north along grid lines, how many shortest paths lead from the origin to the point {a} units east and {b} units north?",
    "{@person} walks to school through a city of square blocks, going {a} blocks east and {b} blocks north in total and never walking west or south. How many different routes could {@person} take?",
  ],
  "committee-with-fixed-member": [
    "A committee of {k} is to be chosen from {n} people, and {@person} must be on it. How many different committees are possible?",
    "Out of a class of {n} students a team of {k} is picked, and the captain, {@person}, is certain to be included. In how many ways can the team be formed?",
  ],
  "rectangle-area": [
    "What is the area of a rectangle {length} cm long and {width} cm wide, in square centimetres?",
    "A garden bed measures {width} m by {length} m. How many square metres does it cover?",
  ],
  "triangle-area-base-height": [
    "What is the area of a triangle with a base of {base} cm and a height of {height} cm, in square centimetres?",
    "A triangular sail is {height} metres tall with a base of {base} metres. Find its area in square metres.",
  ],
  "circle-area-from-radius": [
    "Find the area of a circle with radius {r} cm, to two decimal places.",
    "A round rug has a radius of {r} inches. What is its area in square inches, rounded to the nearest hundredth?",
  ],
  "right-triangle-hypotenuse": [
    "A right triangle has legs of {a} and {b}. How long is the hypotenuse?",
    "A ladder reaches {b} feet up a wall with its foot {a} feet from the base of the wall. How long is the ladder, in feet?",
  ],
  "triangle-third-angle": [
    "Two angles of a triangle are {a}° and {b}°. What is the third angle in degrees?",
    "In triangle ABC, angle A measures {a} degrees and angle B measures {b} degrees. Find angle C in degrees.",
  ],
  "cylinder-volume": [
    "Find the volume of a cylinder with radius {r} cm and height {h} cm, in cubic centimetres to two decimal places.",
    "A cylindrical water tank stands {h} m tall with a base radius of {r} m. How many cubic metres does it hold? Round to two decimal places.",
  ],
  "bag-draw-colour": [
    "A bag holds {red} red, {blue} blue and {green} green marbles. One marble is drawn at random. What is the probability that it is blue, as a fraction?",
    "In a box of crayons, {green} are green, {red} are red and {blue} are blue. If {@person} picks one without looking, what is the chance it is blue? Give the answer as a fraction in lowest terms.",
  ],
  "at-least-one-head": [
    "A fair coin is tossed {n} times. What is the probability of getting at least one head, as a fraction?",
    "{@person} flips {n} fair coins at once. What is the chance that not all of them land tails? Answer as a fraction.",
  ],
  "two-dice-sum": [
    "Two fair six-sided dice are rolled. What is the probability that their sum is {target}? Give a fraction in lowest terms.",
    "{@person} rolls a pair of ordinary dice. What are the chances, as a fraction, that the two numbers shown add up to {target}?",
  ],
  "complement-probability-percent": [
    "A weather app puts tomorrow's rain chance at {p}%. As a fraction, how likely is a dry day?",
    "A basketball player makes a free throw {p} percent of the time. What is the probability, written as a fraction, that the player misses the next free throw?",
  ],
  "two-draws-without-replacement": [
    "A bag contains {red} red and {blue} blue balls. Two balls are drawn without replacement. What is the probability that both are red? Give the answer as a fraction.",
    "{@person} reaches into a jar of {blue} blue and {red} red sweets and takes out two, one after the other, without putting the first back. What is the probability that both sweets are red, as a fraction?",
  ],
};
