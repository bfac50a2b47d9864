"""The knowledge the corpus teaches: small tables the generator renders into questions and
answers. Every fact appears in training under several phrasings; held-out tests ask about
the same facts in phrasings (or operand pairs) that training never showed."""

# country: (capital, continent, language)
COUNTRIES = {
    "France": ("Paris", "Europe", "French"), "Germany": ("Berlin", "Europe", "German"),
    "Italy": ("Rome", "Europe", "Italian"), "Spain": ("Madrid", "Europe", "Spanish"),
    "Portugal": ("Lisbon", "Europe", "Portuguese"), "Greece": ("Athens", "Europe", "Greek"),
    "Poland": ("Warsaw", "Europe", "Polish"), "Sweden": ("Stockholm", "Europe", "Swedish"),
    "Norway": ("Oslo", "Europe", "Norwegian"), "Finland": ("Helsinki", "Europe", "Finnish"),
    "Denmark": ("Copenhagen", "Europe", "Danish"), "Austria": ("Vienna", "Europe", "German"),
    "Ireland": ("Dublin", "Europe", "English"), "Hungary": ("Budapest", "Europe", "Hungarian"),
    "Netherlands": ("Amsterdam", "Europe", "Dutch"), "Belgium": ("Brussels", "Europe", "Dutch"),
    "Switzerland": ("Bern", "Europe", "German"), "Czechia": ("Prague", "Europe", "Czech"),
    "Russia": ("Moscow", "Europe", "Russian"), "Ukraine": ("Kyiv", "Europe", "Ukrainian"),
    "Turkey": ("Ankara", "Asia", "Turkish"), "Egypt": ("Cairo", "Africa", "Arabic"),
    "Kenya": ("Nairobi", "Africa", "Swahili"), "Nigeria": ("Abuja", "Africa", "English"),
    "Morocco": ("Rabat", "Africa", "Arabic"), "Ghana": ("Accra", "Africa", "English"),
    "Ethiopia": ("Addis Ababa", "Africa", "Amharic"), "China": ("Beijing", "Asia", "Chinese"),
    "Japan": ("Tokyo", "Asia", "Japanese"), "India": ("New Delhi", "Asia", "Hindi"),
    "Thailand": ("Bangkok", "Asia", "Thai"), "Vietnam": ("Hanoi", "Asia", "Vietnamese"),
    "Indonesia": ("Jakarta", "Asia", "Indonesian"), "Iran": ("Tehran", "Asia", "Persian"),
    "Pakistan": ("Islamabad", "Asia", "Urdu"), "Canada": ("Ottawa", "North America", "English"),
    "Mexico": ("Mexico City", "North America", "Spanish"), "Cuba": ("Havana", "North America", "Spanish"),
    "Brazil": ("Brasilia", "South America", "Portuguese"), "Argentina": ("Buenos Aires", "South America", "Spanish"),
    "Chile": ("Santiago", "South America", "Spanish"), "Peru": ("Lima", "South America", "Spanish"),
    "Colombia": ("Bogota", "South America", "Spanish"), "Australia": ("Canberra", "Oceania", "English"),
    "New Zealand": ("Wellington", "Oceania", "English"),
}

# thing: colour
COLOURS = {
    "the sky": "blue", "grass": "green", "snow": "white", "a banana": "yellow", "coal": "black",
    "a tomato": "red", "an orange": "orange", "a lemon": "yellow", "milk": "white", "blood": "red",
    "a frog": "green", "chocolate": "brown", "the sun": "yellow", "a strawberry": "red",
    "a carrot": "orange", "the sea": "blue", "an elephant": "grey", "a crow": "black",
    "a plum": "purple", "a pumpkin": "orange", "a cloud": "white", "a leaf": "green",
}

# animal: (sound, legs, what it is)
ANIMALS = {
    "cat": ("meow", 4, "a small pet"), "dog": ("woof", 4, "a loyal pet"), "cow": ("moo", 4, "a farm animal"),
    "sheep": ("baa", 4, "a farm animal"), "duck": ("quack", 2, "a bird that swims"),
    "horse": ("neigh", 4, "a large farm animal"), "pig": ("oink", 4, "a farm animal"),
    "owl": ("hoot", 2, "a bird of the night"), "lion": ("roar", 4, "a big wild cat"),
    "frog": ("croak", 4, "a small animal that jumps"), "snake": ("hiss", 0, "a long reptile"),
    "bee": ("buzz", 6, "an insect that makes honey"), "mouse": ("squeak", 4, "a tiny animal"),
    "rooster": ("crow", 2, "a male chicken"), "goat": ("bleat", 4, "a farm animal"),
    "wolf": ("howl", 4, "a wild animal"), "donkey": ("bray", 4, "a farm animal"),
    "chicken": ("cluck", 2, "a farm bird"), "crow": ("caw", 2, "a black bird"),
    "elephant": ("trumpet", 4, "the largest land animal"),
}

# word: opposite (both directions are asked)
OPPOSITES = {
    "hot": "cold", "big": "small", "up": "down", "fast": "slow", "happy": "sad", "light": "dark",
    "old": "young", "open": "closed", "early": "late", "full": "empty", "hard": "soft",
    "high": "low", "long": "short", "rich": "poor", "strong": "weak", "wet": "dry", "day": "night",
    "left": "right", "in": "out", "good": "bad", "first": "last", "near": "far", "thick": "thin",
    "loud": "quiet", "clean": "dirty", "black": "white", "push": "pull", "win": "lose",
}

# (question subject, answer sentence, number)
UNITS = [
    ("days are in a week", "There are 7 days in a week.", 7),
    ("hours are in a day", "There are 24 hours in a day.", 24),
    ("minutes are in an hour", "There are 60 minutes in an hour.", 60),
    ("seconds are in a minute", "There are 60 seconds in a minute.", 60),
    ("months are in a year", "There are 12 months in a year.", 12),
    ("days are in a year", "There are 365 days in a year.", 365),
    ("centimetres are in a metre", "There are 100 centimetres in a metre.", 100),
    ("metres are in a kilometre", "There are 1000 metres in a kilometre.", 1000),
    ("grams are in a kilogram", "There are 1000 grams in a kilogram.", 1000),
    ("millilitres are in a litre", "There are 1000 millilitres in a litre.", 1000),
    ("years are in a century", "There are 100 years in a century.", 100),
    ("years are in a decade", "There are 10 years in a decade.", 10),
    ("sides does a triangle have", "A triangle has 3 sides.", 3),
    ("sides does a square have", "A square has 4 sides.", 4),
    ("legs does a spider have", "A spider has 8 legs.", 8),
    ("weeks are in a year", "There are 52 weeks in a year.", 52),
    ("days are in a weekend", "There are 2 days in a weekend.", 2),
    ("players are in a football team", "A football team has 11 players.", 11),
]

COLOUR_NAMES = sorted(set(COLOURS.values()))
CONTINENTS = sorted({c for _, c, _ in COUNTRIES.values()})
