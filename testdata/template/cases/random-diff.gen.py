"""Generates random-diff.json: random calls of every deterministic Helm function on argument
values of many Go types, compared with real Helm like every other area. It exists to find
what hand-written cases missed (argument conversions, error texts, odd types).

It also writes random-arity.json: the same kind of calls, but with the number of arguments
each function wants, learned from Helm's "wrong number of args" answers in
../vectors/random-diff.json (so most of those cases reach the function itself).

Run: python3 testdata/template/cases/random-diff.gen.py [SEED] [COUNT], then
scripts/gen-template-vectors.sh random-diff random-arity. The seed is fixed so the files are
reproducible.
"""
import json, os, random, sys

OUT = os.path.dirname(os.path.abspath(__file__))
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261124
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
rng = random.Random(seed)

# Functions whose output depends on time, randomness or the machine are left out.
NONDETERMINISTIC = {
    "now", "ago", "date", "dateInZone", "date_in_zone", "htmlDate", "htmlDateInZone", "unixEpoch",
    "dateModify", "date_modify", "mustDateModify", "must_date_modify", "toDate", "mustToDate",
    "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4",
    "shuffle", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert",
    "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "bcrypt", "htpasswd",
    "encryptAES", "decryptAES", "derivePassword", "buildCustomCert", "getHostByName", "duration",
    "durationRound", "fail", "include", "tpl", "template", "required", "lookup", "toToml",
}
funcs = []
for c in json.load(open(os.path.join(OUT, "funcmap.json"))):
    name = c["name"].split("/", 1)[1]
    if name not in NONDETERMINISTIC and name not in ("env", "expandenv"):
        funcs.append(name)

ARGS = [
    "0", "1", "3", "-2", "64", "1.5", "-0.5", "1e6", "true", "false", "nil",
    '""', '"a"', '"abc"', '"Hello World"', '"héllo wörld"', '"1,2,3"', '"010"', '"0x1F"', '"3.7"',
    '"a.b.c"', '"  pad  "', '"^a(b+)c$"', '"${1}x"', '"1.2.3"', '">= 1.0.0"', '"foo_bar-baz"',
    '"YWJj"', '"null"', '"{\\"a\\": [1, 2]}"', '"[1, \\"x\\"]"', '"a: 1\\nb: [x]"', '"x/y/z.txt"',
    ".Values.s", ".Values.n", ".Values.i", ".Values.f", ".Values.b", ".Values.l", ".Values.m",
    ".Values.e", ".Values.em", ".Values.missing", ".Values.nested", ".Values.strs", ".Values.nul",
    "(list 1 \"a\" 2.5)", "(list)", "(list \"b\" \"a\" \"b\")", "(dict \"a\" 1 \"b\" (list 2))",
    "(dict)", "(int64 5)", "(int 7)", "(float64 2)", "(toStrings (list 1 2))",
    "(splitList \",\" \"x,y\")", "(fromJson \"null\")", "(semver \"1.2.3-rc.1\")",
    # No argument may be a byte string: the oracle cannot carry one inside an error text.
    "(regexSplit \",\" \"a\" 0)", ".Chart", ".Release.Name", ".Capabilities.KubeVersion",
]
VALUES = {
    "s": "hello", "n": 3, "i": 42, "f": 2.5, "b": True, "l": [1, "a", None, 2.5],
    "m": {"a": 1, "b": "x", "c": {"d": [1]}}, "e": [], "em": {}, "nested": {"a": {"b": {"c": "deep"}}},
    "strs": ["b", "a", "c"], "nul": None,
}

ARITY = {}

def call(depth=0):
    f = rng.choice(funcs)
    n = rng.choice([1, 1, 2, 2, 2, 3, 3, 4])
    if f in ARITY:
        want, at_least = ARITY[f]
        n = want + (rng.choice([0, 0, 1, 2]) if at_least else 0)
    args = []
    for _ in range(n):
        if depth < 1 and rng.random() < 0.15:
            args.append("(" + call(depth + 1) + ")")
        else:
            args.append(rng.choice(ARGS))
    return f + " " + " ".join(args)

def generate(area, count):
    cases, seen = [], set()
    while len(cases) < count:
        expr = call()
        if rng.random() < 0.3:
            expr += " | " + rng.choice(["toJson", "typeOf", "len", "toString", "kindOf", "quote"])
        if expr in seen:
            continue
        seen.add(expr)
        cases.append({"name": "%s/r%04d" % (area, len(cases)), "template": "{{ " + expr + " }}",
                      "values": VALUES})
    with open(os.path.join(OUT, area + ".json"), "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("%s.json: %d cases" % (area, len(cases)))

generate("random-diff", count)
answers = os.path.join(OUT, "..", "vectors", "random-diff.json")
if os.path.exists(answers):
    import re
    for case in json.load(open(answers)):
        m = re.search(r"wrong number of args for (\w+): want (at least )?(\d+) got",
                      case.get("expect", {}).get("error", ""))
        if m:
            ARITY[m.group(1)] = (int(m.group(3)), bool(m.group(2)))
    funcs = [f for f in funcs if f in ARITY]
    generate("random-arity", count)
