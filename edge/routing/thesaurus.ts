/**
 * The router's math thesaurus (edge/routing/router.ts, problem-structure.ts): answer-format clauses
 * that are not data, the phrases and synonyms that map the common ways to say one thing to one
 * concept, the concepts a question asks for, the groups whose members change a problem when
 * swapped, function words, and a light stemmer (number words are in number-words.ts).
 */
import { NUMBER_WORDS } from "./number-words.js";

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

/** What a unit follows (`6 foot`, `six-foot`, `per yard`, `how many yards`), as a regex alternation. */
const TAKES_A_UNIT = ["\\d", "square", "cubic", "per", "in", "many", "much", "each", "every", "a", "of"]
  .concat(Object.keys(NUMBER_WORDS))
  .join("|");

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
  // Whether a symbol may be used again (license plates, codes, digits): before `more than`, which
  // `more than once` is not. The negated forms first: `no letter may repeat` holds `may repeat`.
  [
    /\b(?:without|no) (?:repetitions?|repeats?)\b|\b(?:can ?not|can't|may not|must not|not|never|no \w+(?: (?:and|or) no \w+)?) (?:be )?(?:may |can )?(?:repeat\w*|reused|used more than once)/g,
    " norepeat ",
  ],
  [
    /\b(?:with )?(?:repetitions?|repeats?) (?:is |are )?(?:allowed|permitted)\b|\bwith (?:repetitions?|repeats)\b|\b(?:may|can) (?:be )?repeat\w*|\b(?:even )?more than once\b/g,
    " withrepeat ",
  ],
  // `even` as an adverb (`even no toppings`, `even more than once`) is no parity.
  [
    /\beven (?=(?:no|none|zero|more|less|fewer|if|though|when|once|with|without|including|the|a|an|so)\b)/g,
    " ",
  ],
  // `18 degrees larger than`, `2 seats more than`: a difference, not a condition (below).
  [
    /(?<=\d (?!(?:is|are|was|were|be|not) )[a-z]+ )(?:more|greater|larger|bigger|higher|less|fewer|smaller|lower) than\b/g,
    " differ ",
  ],
  // A count asked as an extreme (`the least number of cans`) is a count.
  [/\b(?:smallest|least|fewest|minimum|lowest) (?:possible )?number of\b/g, " many "],
  // The way around a figure, and the length of all its sides, are its perimeter.
  [
    /\b(?:distance|length) (?:all )?(?:the way )?around\b|\baround (?:its|the|their) (?:edges?|outside|boundary|border|rim)\b|\b(?:total )?length of (?:all )?(?:its|the) (?:\w+ )?sides\b/g,
    " perimeter ",
  ],
  [/\bcurrent(?= ages?\b)/g, " now "],
  [/\bgrown-? ?ups?\b/g, " adult "],
  // Definitions said instead of the name: the segment's length is the distance between its ends,
  // the largest number dividing both is their gcd, the multiples of 7 are the numbers divisible by 7.
  [/\blength of (?:the |a )?(?:line )?segment (?=joining|between|connecting|from)/g, " distance "],
  [
    /\b(?:largest|greatest|biggest|highest) (?:\w+ )?(?:that|which) divides (?:both|each of|all of)\b/g,
    " gcd ",
  ],
  [/\bmultiples? of\b(?= \d)/g, " divisible by "],
  // `how many kilometers apart`: a distance (`degrees apart` is an angle).
  [
    /(?<=\bhow many (?:kilometer|meter|centimeter|millimeter|miles?|feet|yards?|inch(?:es)?) )apart\b/g,
    " distance ",
  ],
  // `the foot of the ladder` is its base, `a rectangular yard` a place: units only after a number
  // or a word that takes a unit.
  [new RegExp(`(?<!(?:${TAKES_A_UNIT})[\\s-]?)\\bfoot\\b`, "g"), " base "],
  [new RegExp(`(?<!(?:${TAKES_A_UNIT})[\\s-]?)\\byards?\\b`, "g"), " yardplace "],
  [/\bnet (?:gain|win\w*)\b/g, " profit "],
  [/\b(?:leaves?|leaving|with|has|have) no remainder\b/g, " divisible "],
  [/\bthe remainder\b(?! (?:when|of|after|on|is|upon))/g, " the rest "],
  // A `30% salt solution` is a mixture, not an equation's root.
  [
    /(?<=percent (?:[a-z]+ )?)solutions?\b|\bsolutions?\b(?! (?:of|to|for)\b)(?=[^.?]*\b(?:percent|salt|sugar|acid|alcohol|concentration)\b)/g,
    " mixture ",
  ],
  // `no member holds more than 1 office`: each holds at most 1.
  [/(?<=\b(?:no (?:[a-z]+ ){1,2}|nobody (?:[a-z]+ ){0,2}))(?:more|greater) than\b/g, " atmost "],
  [/\btakes? away\b|\btook away\b/g, " remove "],
  [/\b(?:at least|no (?:less|fewer) than|greater than or equal to|>=)/g, " atleast "],
  [/\b(?:at most|no (?:more|greater) than|less than or equal to|<=)/g, " atmost "],
  // `3 more than the one before` is a difference, not a condition.
  [/(?<!\d )\b(?:more|greater|larger|bigger|higher) than\b|(?<!\S)>(?!\S)/g, " morethan "],
  [/(?<!\d )\b(?:less|fewer|smaller|lower) than\b|(?<!\S)<(?!\S)/g, " lessthan "],
  [
    /\bwithout (?:replac|putting|returning)\w*(?: (?:it|them|the \w+(?: one)?|each \w+))?(?: back)?|\bnot (?:replac|put|return) ?\w*(?: back)?/g,
    " withoutreplacement ",
  ],
  [
    /\bwith replac\w*|\b(?:put|puts|putting|placed|returned|returns?|returning) (?:it |them )?back\b|\breturn (?:it|them)\b/g,
    " withreplacement ",
  ],
  [/\b(?:towards?|approach\w*) (?:each other|one another)\b/g, " toward "],
  [/\b(?:in the same direction|catch(?:es)? up(?: with)?|overtakes?)\b/g, " samedirection "],
  // Seats around a round table (or in a circle) are counted up to rotation; in a row they are not.
  [
    /\b(?:round|circular) (?:\w+ )?table\b|\bin a (?:circle|ring)\b|\bcircular arrangements?\b/g,
    " roundtable ",
  ],
  [/\b(?:lined|line) up\b|\bin (?:a )?(?:row|line)\b|\bin (?:different |distinct )?orders?\b/g, " arrange "],
  [/\badd(?:s|ed)? up\b|\btotal of\b|\btotal(?:s|ing|ling)\b/g, " sum "],
  [/\btaken away\b|\btake away\b|\btaken out\b|\btake out\b/g, " remove "],
  [/\bgo(?:es)? up\b|\bwent up\b/g, " increase "],
  [/\bside by side\b|\bnext to each other\b|\btogether\b/g, " together "],
  [/(?<=\d)!|\bfactorial\b/g, " factorial "],
  [/\bone or more\b/g, " atleast one "],
  [/\bwhole numbers?\b/g, " integer "],
  // Normalization writes `98.6 °F` as `98.6 degreesF`.
  [/°\s?f\b|\bdegrees? ?f\b/g, " fahrenheit "],
  [/°\s?c\b|\bdegrees? ?c\b/g, " celsius "],
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
  likely: "probability",
  old: "age",
  present: "now",
  today: "now",
  outside: "surface",
  subtract: "remove",
  minus: "remove",
  deduct: "remove",
  task: "job",
  project: "job",
  // Everyday names of the same people and things.
  kid: "child",
  children: "child",
  pupil: "student",
  laborer: "worker",
  labourer: "worker",
  employee: "worker",
  revenue: "income",
  earnings: "income",
  takings: "income",
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
export const EXCLUSIVE: { members: string[]; strict: boolean; unit?: true }[] = [
  ...UNIT_GROUPS.map((members) => ({ members, strict: false, unit: true as const })),
  { members: ["atleast", "atmost", "morethan", "lessthan"], strict: true },
  { members: ["withoutreplacement", "withreplacement"], strict: false },
  { members: ["arrange", "choose"], strict: false },
  { members: ["toward", "samedirection"], strict: false },
  // A relation's direction (`8 years older than` vs `younger than`) and a parity (`even integers`).
  { members: ["older", "younger"], strict: false },
  { members: ["faster", "slower"], strict: false },
  { members: ["even", "odd"], strict: true },
  { members: ["discount", "markup"], strict: false },
  { members: ["withrepeat", "norepeat"], strict: false },
  { members: ["roundtable"], strict: true },
  { members: ["complementary", "supplementary"], strict: false },
  { members: ["add", "remove"], strict: false },
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
    "nearest decimal place places measure measures measured measuring measurement combined"
  ).split(" "),
);

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
