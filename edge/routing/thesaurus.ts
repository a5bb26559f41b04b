/**
 * The router's math thesaurus (edge/routing/router.ts, problem-structure.ts): answer-format clauses
 * that are not data, the phrases and synonyms that map the common ways to say one thing to one
 * concept, the concepts a question asks for, the groups whose members change a problem when
 * swapped, function words, number words, and a light stemmer.
 */
/**
 * Clauses that say how to write the answer, not what the problem is: their numbers (`2 decimal
 * places`) are not the problem's.
 */
export const FORMAT_CLAUSES: [RegExp, string][] = [
  [
    /\b(?:(?:rounded|round(?:ing)?|correct|accurate)\s+(?:off\s+)?)?to\s+(?:the\s+)?(?:nearest\s+(?:whole\s+)?[a-z]+|(?:\d+|one|two|three|four|five|six)\s+(?:decimal(?:\s+places?)?s?|significant\s+(?:figures|digits)|places?|dp))\b/g,
    " ",
  ],
  [
    /\b(?:(?:give|write|express|state)\s+(?:it\s+|the\s+answer\s+|your\s+answer\s+)?(?:as\s+)?|as\s+)(?:an?\s+)?(?:common\s+|reduced\s+|simplified\s+|irreducible\s+)?fraction\b/g,
    " ",
  ],
  [/\bin\s+(?:lowest|simplest)\s+(?:terms|form)\b/g, " "],
];

/** Phrases for one concept, to one word (applied in order, before the words are split). */
export const PHRASES: [RegExp, string][] = [
  [/\b(?:greatest|highest|largest|biggest) common (?:divisor|factor)\b|\bgcf\b|\bhcf\b/g, " gcd "],
  [/\b(?:least|lowest|smallest) common multiple\b/g, " lcm "],
  [/%|\bper ?cent(?:age)?s?\b/g, " percent "],
  [/\(?\bp?mod(?:ulo)?\b/g, " remainder "],
  [/\b(?:km\/h|kmph|kph|km per hour|kilomet(?:er|re)s? (?:per|an|a) hour)\b/g, " kmh "],
  [/\b(?:m\/s|meters? per second|metres? per second)(?![a-z])/g, " mps "],
  [/\b(?:mph|miles? per hour)\b/g, " mph "],
  [
    /\b(cm|mm|km|m|centimet(?:er|re)s?|met(?:er|re)s?|inch(?:es)?|f(?:ee|oo)t|yards?|miles?)\^2\b/g,
    " square $1 ",
  ],
  [/\b(cm|mm|km|m|centimet(?:er|re)s?|met(?:er|re)s?|inch(?:es)?|f(?:ee|oo)t|yards?)\^3\b/g, " cubic $1 "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)cm\b|\bcentimet(?:er|re)s?\b/g, " centimeter "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)mm\b|\bmillimet(?:er|re)s?\b/g, " millimeter "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)km\b|\bkilomet(?:er|re)s?\b/g, " kilometer "],
  [/(?<=(?:\d|square|cubic|\bin|\bper) ?)m\b|\bmet(?:er|re)s?\b/g, " meter "],
  [/(?<=(?:\d|\bin|\bper) ?)l\b|\blit(?:er|re)s?\b/g, " liter "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:h|hrs?)\b|\bhours?\b|\bhourly\b/g, " hour "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:min|mins)\b|\bminutes?\b/g, " minute "],
  [/(?<=(?:\d|\bin|\bper) ?)(?:s|secs?)\b|\bseconds?\b/g, " second "],
  // Squared and cubed lengths measure an area and a volume; as units they are not the asked-for
  // `square` or `cube` of a number (`the sum of the squares`).
  [
    /\bsquare (?=(?:millimeter|centimeter|meter|kilometer|inch(?:es)?|f(?:oo|ee)t|yards?|miles?)\b)/g,
    " area areaunit ",
  ],
  [
    /\bcubic (?=(?:millimeter|centimeter|meter|kilometer|inch(?:es)?|f(?:oo|ee)t|yards?)\b)/g,
    " volume volumeunit ",
  ],
  [/\blongest side\b/g, " hypotenuse "],
  [/\b(?:years?|annual(?:ly)?|yearly|per annum|a year)\b/g, " year "],
  [/\b(?:months?|monthly)\b/g, " month "],
  [/\b(?:weeks?|weekly)\b/g, " week "],
  [/\b(?:days?|daily)\b/g, " day "],
  [/\b(?:at least|no (?:less|fewer) than|greater than or equal to|>=)/g, " atleast "],
  [/\b(?:at most|no (?:more|greater) than|less than or equal to|<=)/g, " atmost "],
  // `3 more than the one before` is a difference, not a condition.
  [/(?<!\d )\b(?:more|greater|larger|bigger|higher) than\b|(?<!\S)>(?!\S)/g, " morethan "],
  [/(?<!\d )\b(?:less|fewer|smaller|lower) than\b|(?<!\S)<(?!\S)/g, " lessthan "],
  [/\bwithout replac\w*|\bnot (?:replac|put) ?\w*(?: back)?/g, " withoutreplacement "],
  [/\bwith replac\w*/g, " withreplacement "],
  [/\b(?:towards?|approach\w*) (?:each other|one another)\b/g, " toward "],
  [/\b(?:in the same direction|catch(?:es)? up(?: with)?|overtakes?)\b/g, " samedirection "],
  [/\b(?:lined|line) up\b|\bin (?:a )?(?:row|line)\b|\bin (?:different |distinct )?orders?\b/g, " arrange "],
  [/\badd(?:s|ed)? up\b|\btotal of\b|\btotal(?:s|ing|ling)\b/g, " sum "],
  [/\btaken away\b|\btake away\b|\btaken out\b|\btake out\b/g, " remove "],
  [/\bgo(?:es)? up\b|\bwent up\b/g, " increase "],
  [/\bside by side\b|\bnext to each other\b|\btogether\b/g, " together "],
  [/(?<=\d)!|\bfactorial\b/g, " factorial "],
  [/\bone or more\b/g, " atleast one "],
  [/\bwhole numbers?\b/g, " integer "],
  [/°\s?f\b|\bdegrees? f\b/g, " fahrenheit "],
  [/°\s?c\b|\bdegrees? c\b/g, " celsius "],
  [/\bcan't\b|\bcannot\b/g, " can not "],
  [/\bwon't\b/g, " will not "],
  [/n't\b/g, " not "],
  [/\bstill water\b/g, " stillwater "],
  // `how far apart`, `how far is it`; not `how far up the wall` (a height) or `so far`.
  [/\bhow far\b(?! up| down)/g, " how distance "],
  [/\bfar apart\b/g, " distance "],
];

/** Words that name the same concept (word forms meet through `stem`). */
const SYNONYMS: Record<string, string> = {
  bigger: "larger",
  greater: "larger",
  higher: "larger",
  biggest: "largest",
  greatest: "largest",
  highest: "largest",
  maximum: "largest",
  lesser: "smaller",
  lower: "smaller",
  least: "smallest",
  lowest: "smallest",
  minimum: "smallest",
  solution: "root",
  chance: "probability",
  likelihood: "probability",
  mean: "average",
  factor: "divisor",
  way: "way",
  arrangement: "way",
  ordering: "way",
  permutation: "way",
  arranged: "arrange",
  permute: "arrange",
  seat: "arrange",
  stand: "arrange",
  place: "arrange",
  chose: "choose",
  chosen: "choose",
  select: "choose",
  pick: "choose",
  form: "choose",
  die: "dice",
  thrown: "roll",
  throw: "roll",
  toss: "roll",
  cast: "roll",
  drawn: "draw",
  price: "cost",
  costing: "cost",
  bought: "buy",
  purchase: "buy",
  sold: "sell",
  paid: "pay",
  spent: "spend",
  velocity: "speed",
  fast: "speed",
  long: "length",
  wide: "width",
  breadth: "width",
  high: "height",
  tall: "height",
  deep: "depth",
  met: "meet",
  full: "fill",
  grew: "increase",
  grow: "increase",
  grown: "increase",
  rose: "increase",
  rise: "increase",
  gain: "increase",
  progression: "sequence",
  series: "sequence",
  adjacent: "together",
  distinct: "different",
  residents: "population",
  resident: "population",
  inhabitant: "population",
  addition: "sum",
  divisible: "divide",
  division: "divide",
  multiple: "times",
  twice: "times",
  double: "times",
  gradient: "slope",
  gratuity: "tip",
  female: "woman",
  male: "man",
  women: "woman",
  men: "man",
  saved: "save",
  saving: "save",
  cubed: "cube",
  squared: "square",
  decreased: "decrease",
  drop: "decrease",
  fell: "decrease",
  fall: "decrease",
};

/** Concepts that name what a question asks for (compared in the question sentence). */
export const ASKED = new Set(
  (
    "sum product quotient ratio difference perimeter area circumference volume surface average median " +
    "mode gcd lcm remainder probability percent smallest largest smaller larger even odd prime root " +
    "digit factorial divisor hypotenuse zero angle distance midpoint slope cube square interest profit " +
    "loss save handshake diagonal"
  ).split(" "),
);

/** Units of one dimension each: time, length, speed. */
const UNIT_GROUPS = [
  ["second", "minute", "hour", "day", "week", "month", "year"],
  ["millimeter", "centimeter", "meter", "kilometer", "inch", "foot", "yard", "mile"],
  ["kmh", "mps", "mph"],
];

/**
 * Concept groups whose members change the problem when swapped (units of one dimension, the
 * comparison in a condition, drawing with or without replacement, order mattering or not, the
 * direction of motion). `strict`: absent on one side and present on the other differs too.
 */
export const EXCLUSIVE: { members: string[]; strict: boolean }[] = [
  ...UNIT_GROUPS.map((members) => ({ members, strict: false })),
  { members: ["atleast", "atmost", "morethan", "lessthan"], strict: true },
  { members: ["withoutreplacement", "withreplacement"], strict: false },
  { members: ["arrange", "choose"], strict: false },
  { members: ["toward", "samedirection"], strict: false },
  // A relation's direction (`8 years older than` vs `younger than`) and a parity (`even integers`).
  { members: ["older", "younger"], strict: false },
  { members: ["faster", "slower"], strict: false },
  { members: ["even", "odd"], strict: true },
  { members: ["discount", "markup"], strict: false },
];

/** Concepts that are units of measure: a question says them to ask in a unit, not about a thing. */
export const UNIT_CONCEPTS = new Set([
  ...UNIT_GROUPS.flat(),
  ..."liter gram kilogram percent degree areaunit volumeunit".split(" "),
]);

/** Stem -> concept: the thesaurus, and every concept's own stem (`minutes` -> `minute`). */
export const CONCEPT_OF_STEM = new Map<string, string>([
  ...[...ASKED, ...EXCLUSIVE.flatMap((g) => g.members), ...Object.values(SYNONYMS)].map(
    (c) => [stem(c), c] as [string, string],
  ),
  ...Object.entries(SYNONYMS).map(([word, c]) => [stem(word), c] as [string, string]),
]);

/** A word's concept: its stem, or the concept the thesaurus maps that stem to. */
export function canonicalConcept(word: string): string {
  const stemmed = stem(word);
  return CONCEPT_OF_STEM.get(stemmed) ?? stemmed;
}

/** Letters that are units, not variables, when they stand alone. */
export const UNIT_LETTERS = new Set(["m", "s", "l", "h", "g", "k"]);

/** Function words, question phrasing and filler: they say how something is asked, not what. */
export const STOP_WORDS = new Set(
  (
    "a an the of is are was were be been being to in on at by for from with and or if as than then so " +
    "it its this that these those there their them they he she his her him we you your i me my our " +
    "what which when who whom whose how many much does do did have has had will would should can could " +
    "may might must shall solve find compute calculate determine evaluate count give get answer value express " +
    "write result number numbers exactly each every other both all any some also only just into out up " +
    "down about over per such where while same one ones rest remaining remain after before first then " +
    "left possible different particular specific certain given respectively follow following show " +
    "need needed take taken takes make made let suppose assume equal equals dollar dollars cent cents " +
    "unit units alone own itself themselves another whole entire altogether total round rounded precisely " +
    "nearest decimal place places"
  ).split(" "),
);

export const NUMBER_WORDS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
  hundred: 100,
  thousand: 1000,
  dozen: 12,
};

/** Ordinals that are positions (`the tenth term` = `the 10th term`); `first`..`third` are too common. */
export const ORDINALS: Record<string, number> = {
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  eleventh: 11,
  twelfth: 12,
  fifteenth: 15,
  twentieth: 20,
  thirtieth: 30,
  fiftieth: 50,
  hundredth: 100,
};

/** Words that state a factor (`twice as old`, `double the previous term`). */
export const MULTIPLES: Record<string, number> = { twice: 2, double: 2, doubles: 2, triple: 3, thrice: 3 };

/**
 * A light stemmer: plural and verb endings (`divisors`, `arranged`, `painting`), so word forms of
 * one word meet; not a full Porter stemmer, whose merges surprise (`general` = `generous`).
 */
export function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith("ies")) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(?:ss|sh|ch|x)es$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith("ed") && !w.endsWith("eed")) w = w.slice(0, -2);
  if (w.length > 4 && w.endsWith("e")) w = w.slice(0, -1);
  // `stopped` -> `stopp` -> `stop`
  if (w.length > 4 && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  return w;
}

/**
 * The words a concept stands for in library text, where they differ from the concept itself
 * (templates are searched as written). Few on purpose: every word searched costs a BM25 score
 * for each template that holds it.
 */
export const SEARCH_EXPANSIONS: Record<string, string> = {
  gcd: "greatest common divisor",
  lcm: "least common multiple",
  remainder: "mod divided",
  percent: "percentage",
  larger: "bigger greater",
  root: "solution",
  probability: "chance",
  average: "mean",
  divisor: "factor",
  arrange: "arranged lined",
  choose: "chosen selected",
  cost: "price",
  kmh: "km",
  mps: "meters second",
  together: "adjacent",
  areaunit: "square",
  volumeunit: "cubic",
};
