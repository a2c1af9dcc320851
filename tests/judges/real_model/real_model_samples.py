"""Twenty small RAG samples (question, answer, context documents) for the real-model judge tests."""

SAMPLES = [
    (
        "What is the capital of France?",
        "The capital of France is Paris.",
        ["Paris is the capital and largest city of France.", "France is in Western Europe."],
    ),
    (
        "Who wrote Hamlet?",
        "Hamlet was written by Charles Dickens in 1850.",
        ["Hamlet is a tragedy written by William Shakespeare around 1600."],
    ),
    (
        "How many legs does a spider have?",
        "Spiders have eight legs.",
        ["Spiders are arachnids with eight legs.", "Insects have six legs."],
    ),
    ("What is 12 times 12?", "12 times 12 is 144.", ["Multiplication tables list 12 x 12 = 144."]),
    (
        "What gas do plants absorb?",
        "Plants absorb carbon dioxide from the air for photosynthesis.",
        ["During photosynthesis plants take in carbon dioxide and release oxygen."],
    ),
    (
        "When did World War II end?",
        "It ended in 1945.",
        ["World War II ended in 1945 with the surrender of Japan.", "The war began in 1939."],
    ),
    (
        "What is the boiling point of water at sea level?",
        "Water boils at 50 degrees Celsius.",
        ["At sea level water boils at 100 degrees Celsius."],
    ),
    (
        "Who painted the Mona Lisa?",
        "Leonardo da Vinci painted the Mona Lisa.",
        ["The Mona Lisa is a portrait by Leonardo da Vinci.", "It hangs in the Louvre."],
    ),
    (
        "What is the largest planet?",
        "Jupiter is the largest planet in the solar system.",
        ["Jupiter is the largest planet of the solar system.", "Saturn has rings."],
    ),
    (
        "How do I reset my password?",
        "Click 'Forgot password' on the login page and follow the email link.",
        [
            "To reset a password, use the Forgot password link on the login page.",
            "Our office is open 9 to 5.",
        ],
    ),
    (
        "What is the speed of light?",
        "About 300,000 kilometres per second.",
        ["Light travels at about 299,792 kilometres per second in a vacuum."],
    ),
    (
        "What language is spoken in Brazil?",
        "People in Brazil speak Spanish.",
        ["The official language of Brazil is Portuguese."],
    ),
    (
        "What is DNA?",
        "DNA is the molecule that carries genetic information in living things.",
        ["Deoxyribonucleic acid (DNA) carries the genetic instructions of organisms."],
    ),
    (
        "How many continents are there?",
        "There are seven continents.",
        ["Most conventions count seven continents.", "Antarctica is the coldest continent."],
    ),
    (
        "What is the chemical symbol for gold?",
        "The symbol for gold is Au.",
        ["Gold has the chemical symbol Au, from the Latin aurum."],
    ),
    (
        "Who was the first person on the Moon?",
        "Neil Armstrong, in 1969.",
        ["Neil Armstrong was the first person to walk on the Moon, on 20 July 1969."],
    ),
    (
        "What is the tallest mountain?",
        "Mount Everest is the tallest mountain above sea level.",
        ["Mount Everest rises 8,849 metres above sea level."],
    ),
    (
        "How long is a marathon?",
        "A marathon is 10 kilometres long.",
        ["The marathon distance is 42.195 kilometres."],
    ),
    (
        "What do bees make?",
        "Bees make honey and beeswax.",
        ["Honey bees produce honey and beeswax.", "Bees pollinate flowers."],
    ),
    (
        "What is the freezing point of water?",
        "Water freezes at 0 degrees Celsius.",
        ["Pure water freezes at 0 degrees Celsius at standard pressure."],
    ),
]
