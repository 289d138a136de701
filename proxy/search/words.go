package search

// The word lists below are written from general knowledge of tool catalogs
// (file systems, version control, issue trackers, browsers, chat, memory),
// not from any evaluation query. Keep them small and generic: a synonym that
// only one catalog uses belongs in that server's description, not here.

// stopWords carry no meaning for choosing a tool; they are dropped from the
// catalog and the query alike.
var stopWords = setOf(
	"a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "by", "for", "from", "with",
	"into", "onto", "as", "is", "are", "was", "be", "been", "it", "its", "this", "that",
	"these", "those", "there", "here", "i", "me", "my", "we", "our", "us", "you", "your",
	"he", "she", "they", "them", "their", "please", "can", "could", "would", "should", "will",
	"shall", "may", "might", "must", "do", "does", "did", "done", "want", "wanna", "need",
	"like", "let", "lets", "just", "some", "any", "so", "if", "then", "than", "also", "about",
	"what", "whats", "which", "who", "whom", "how", "when", "where", "why", "up", "out",
	"via", "using", "use", "tool", "tools", "able", "something", "thing", "things", "kind",
	"hey", "hi", "ok", "okay", "now", "currently", "given", "specified", "specific",
	"have", "has", "had", "get's", "am", "im", "not", "no", "yes", "one", "very", "really",
	"etc", "eg", "ie", "s", "t", "way", "try", "help", "tell",
)

// namingWords announce a name: the word after them is an argument value
// ("a folder called build").
var namingWords = setOf("called", "named", "titled", "labelled", "labeled")

// prepositions start the part of a request that holds its arguments.
var prepositions = setOf("for", "about", "near", "to", "from", "by", "into", "with", "of", "on", "at",
	"in", "under", "over", "between", "like", "as", "saying", "containing", "where", "whose", "that")

// synonyms are groups of words a person uses for the same thing when asking
// for a tool. A query word matches the other words of its groups at
// options.Synonym. Words are stemmed when the index is built.
var synonyms = [][]string{
	{"get", "fetch", "read", "retrieve", "show", "view", "display", "load", "obtain", "see"},
	{"create", "add", "new", "make", "insert", "generate"},
	{"delete", "remove", "erase", "drop", "destroy", "rm", "del", "unlink", "discard", "trash"},
	{"list", "all", "enumerate", "ls", "every", "browse"},
	{"search", "find", "lookup", "query", "look", "locate", "seek", "grep", "discover"},
	{"edit", "update", "change", "modify", "alter", "patch", "amend", "replace", "rewrite"},
	{"write", "save", "store", "put", "persist", "record"},
	{"issue", "ticket", "bug", "task"},
	{"pr", "mr", "patch"},
	{"screenshot", "capture", "screengrab", "screencap"},
	{"page", "tab", "website", "site", "webpage", "url", "link", "web"},
	{"navigate", "go", "visit", "goto", "open", "browse"},
	{"directory", "folder", "dir"},
	{"file", "document", "doc"},
	{"run", "execute", "exec", "invoke", "launch", "call", "start", "evaluate", "eval"},
	{"send", "post", "publish", "message"},
	{"message", "msg", "chat", "conversation", "dm"},
	{"user", "person", "people", "account", "member", "profile"},
	{"repo", "repository", "project"},
	{"move", "rename", "mv", "relocate"},
	{"copy", "duplicate", "cp", "clone"},
	{"time", "clock", "date"},
	{"timezone", "tz", "zone"},
	{"click", "press", "tap"},
	{"type", "enter", "fill", "input"},
	{"close", "quit", "exit", "shut"},
	{"wait", "sleep", "pause", "delay"},
	{"image", "picture", "photo", "img"},
	{"download", "fetch"},
	{"upload", "attach"},
	{"error", "failure", "problem", "exception", "fail", "crash", "broken"},
	{"fix", "resolve", "repair", "solve"},
	{"latest", "recent", "newest", "last", "current"},
	{"distance", "far", "route", "directions"},
	{"address", "location", "place", "coordinates", "where"},
	{"email", "mail", "inbox"},
	{"remember", "memorize", "memory", "recall", "knowledge"},
	{"stop", "halt", "kill", "terminate", "cancel", "abort"},
	{"info", "information", "detail", "metadata", "stat", "properties", "describe"},
	{"text", "content", "body"},
	{"diff", "difference", "compare", "changes"},
	{"tree", "hierarchy", "structure", "outline"},
	{"tag", "label"},
	{"comment", "reply", "review"},
	{"think", "reason", "reflect", "ponder", "plan"},
	{"database", "db", "sql", "table"},
	{"log", "history", "journal"},
	{"entity", "node", "object", "item"},
	{"relation", "relationship", "link", "connection", "edge"},
	{"observation", "fact", "note"},
	{"convert", "transform"},
	{"console", "terminal", "shell", "command"},
	{"network", "request", "http"},
	{"key", "keyboard"},
	{"hover", "mouse"},
	{"scroll", "swipe"},
	{"resize", "size", "dimension"},
	{"form", "field"},
	{"dialog", "alert", "popup", "prompt"},
	{"branch", "ref"},
	{"commit", "revision"},
	{"merge", "combine"},
	{"head", "first", "beginning", "top"},
	{"tail", "last", "end"},
}

// phrases are word pairs that name one thing; where a pair occurs the
// analyser also emits the single word, so "pull request" meets "PR".
var phrases = map[[2]string]string{
	{"pull", "request"}:  "pr",
	{"merge", "request"}: "mr",
	{"web", "page"}:      "webpage",
	{"web", "site"}:      "website",
	{"screen", "shot"}:   "screenshot",
	{"time", "zone"}:     "timezone",
	{"look", "up"}:       "lookup",
	{"file", "system"}:   "filesystem",
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
