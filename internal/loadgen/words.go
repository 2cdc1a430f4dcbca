package loadgen

// words is the fixed vocabulary prompts are drawn from: short, frequent
// English words that BPE tokenizers of the Llama, Qwen, Mistral and GPT
// families encode as one token each when preceded by a space.
var words = [...]string{
	"the", "of", "and", "to", "in", "is", "for", "that", "with", "on",
	"as", "was", "at", "by", "it", "from", "be", "this", "are", "or",
	"an", "have", "not", "but", "had", "they", "his", "her", "one", "all",
	"were", "we", "there", "been", "has", "their", "more", "will", "would", "when",
	"who", "can", "out", "about", "if", "up", "so", "what", "said", "into",
	"time", "people", "year", "way", "day", "man", "thing", "woman", "life", "child",
	"world", "school", "state", "family", "student", "group", "country", "problem", "hand", "part",
	"place", "case", "week", "company", "system", "program", "question", "work", "number", "night",
	"point", "home", "water", "room", "mother", "area", "money", "story", "fact", "month",
	"lot", "right", "study", "book", "eye", "job", "word", "business", "issue", "side",
	"kind", "head", "house", "service", "friend", "father", "power", "hour", "game", "line",
	"end", "member", "law", "car", "city", "name", "team", "minute", "idea", "body",
	"back", "face", "level", "office", "door", "health", "person", "art", "war", "history",
	"party", "result", "change", "morning", "reason", "research", "girl", "moment", "air", "force",
	"good", "new", "first", "last", "long", "great", "little", "own", "other", "old",
	"big", "high", "small", "large", "next", "early", "young", "important", "few", "public",
	"bad", "same", "able", "make", "know", "take", "see", "come", "think", "look",
	"want", "give", "use", "find", "tell", "ask", "seem", "feel", "try", "leave",
	"call", "keep", "let", "begin", "help", "show", "hear", "play", "run", "move",
	"live", "believe", "hold", "bring", "happen", "write", "sit", "stand", "lose", "pay",
	"meet", "include", "continue", "set", "learn", "lead", "understand", "watch", "follow", "stop",
	"create", "speak", "read", "spend", "grow", "open", "walk", "win", "offer", "remember",
	"love", "consider", "appear", "buy", "wait", "serve", "die", "send", "expect", "build",
	"stay", "fall", "cut", "reach", "kill", "remain", "suggest", "raise", "pass", "sell",
	"light", "music", "market", "paper", "river", "table", "voice", "field", "price", "tree",
}
