package search

// The word lists below are written from general knowledge of tool catalogs
// (file systems, version control, issue trackers, browsers, chat, memory),
// not from any evaluation query. Keep them small and generic: a synonym that
// only one catalog uses belongs in that server's description, not here.

// stopWords carry no meaning for choosing a tool; they are dropped from the
// catalog and the query alike.
var stopWords = setOf(
	// The usual English list (NLTK's, less "all", "no", "not" and "off"
	// kept or dropped below, and less words tools are named by: "before",
	// "after", "above", "below", "over", "down", "up").
	"i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
	"yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
	"it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
	"who", "whom", "whose", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be",
	"been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an",
	"the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by",
	"for", "with", "about", "against", "between", "into", "through", "during", "to", "from",
	"in", "out", "on", "under", "again", "further", "then", "once", "here", "there", "when",
	"where", "why", "how", "any", "both", "each", "few", "more", "most", "other", "some",
	"such", "nor", "only", "own", "same", "so", "than", "too", "very", "can", "will", "just",
	"should", "now", "onto", "upon", "within", "without", "yet", "still",
	// Contractions, split at the apostrophe: "doesn't" → doesn, t.
	"s", "t", "d", "ll", "m", "re", "ve", "don", "doesn", "didn", "isn", "aren", "wasn",
	"weren", "won", "wouldn", "shouldn", "couldn", "hasn", "haven", "hadn", "can't", "im",
	"whats", "lets", "thats", "theres",
	// Requests to an agent.
	"please", "could", "would", "shall", "may", "might", "must", "want", "wanna", "need",
	"like", "let", "also", "via", "using", "use", "tool", "tools", "able", "something",
	"thing", "things", "kind", "hey", "hi", "ok", "okay", "currently", "given", "specified",
	"specific", "really", "etc", "eg", "ie", "way", "try", "help", "tell", "give", "much",
	"many", "every", "one", "yes", "no", "not", "done",
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

// products are well-known products and services that tools act on, written
// from general knowledge of what people ask agents to use (not from the
// evaluation's queries), one distinctive lower-case word each; words that
// are also plain English ("linear", "monday", "box", "square", "zoom",
// "threads", "segment") or name a file format that file tools handle
// ("excel", "powerpoint") are left out.
// A request that names one the catalog does not know at all is for a tool
// the catalog does not have ("add a task to my Asana project"), however well
// its other words match: see ranking.foreign.
var products = setOf(
	// Work tracking, documents and knowledge.
	"jira", "confluence", "trello", "asana", "clickup", "basecamp", "airtable", "smartsheet",
	"wrike", "todoist", "evernote", "onenote", "coda", "quip", "dropbox", "onedrive", "sharepoint",
	"icloud", "docusign", "hellosign", "typeform", "surveymonkey", "calendly", "doodle",
	// Sales, support and marketing.
	"salesforce", "pipedrive", "zoho", "zendesk", "freshdesk", "intercom", "helpscout", "servicenow",
	"mailchimp", "sendgrid", "mailgun", "twilio", "klaviyo", "marketo", "hootsuite",
	// Mail, chat and meetings.
	"gmail", "outlook", "hotmail", "protonmail", "discord", "telegram", "whatsapp", "skype",
	"webex", "gotomeeting", "microsoft", "mattermost", "rocketchat",
	// Social networks and media.
	"twitter", "tweet", "retweet", "facebook", "instagram", "tiktok", "youtube", "reddit", "pinterest",
	"snapchat", "mastodon", "bluesky", "linkedin", "spotify", "netflix", "twitch", "soundcloud",
	// Commerce, money and travel.
	"stripe", "paypal", "venmo", "shopify", "woocommerce", "magento", "etsy", "ebay", "amazon",
	"quickbooks", "xero", "freshbooks", "expensify", "gusto", "workday", "bamboohr", "uber", "lyft",
	"airbnb", "expedia", "tripadvisor", "doordash", "ubereats", "grubhub", "instacart", "opentable",
	// Cloud, deployment and operations.
	"vercel", "netlify", "heroku", "digitalocean", "linode", "cloudflare", "azure", "gcp", "bigquery",
	"snowflake", "databricks", "redshift", "terraform", "ansible", "pulumi", "jenkins", "circleci",
	"travis", "teamcity", "bitbucket", "gitea", "datadog", "newrelic", "splunk", "pagerduty",
	"opsgenie", "dynatrace", "okta", "auth0", "onelogin", "1password", "lastpass", "bitwarden",
	"launchdarkly", "bugsnag", "rollbar", "mixpanel", "amplitude", "hotjar",
	// Design, content and analytics.
	"figma", "miro", "canva", "photoshop", "lucidchart", "loom", "wordpress", "drupal", "webflow",
	"wix", "squarespace", "contentful", "godaddy", "namecheap", "tableau", "looker", "powerbi",
	"zapier", "ifttt",
)

// productPairs are products named by two words, the first of them a
// company whose name alone says too little ("google" is also Maps, Drive
// and Search); the pair is foreign when the catalog does not know its
// second word.
var productPairs = map[[2]string]bool{
	{"google", "calendar"}: true, {"google", "meet"}: true, {"google", "sheets"}: true,
	{"google", "slides"}: true, {"google", "analytics"}: true, {"google", "ads"}: true,
	{"google", "photos"}: true, {"google", "keep"}: true, {"google", "forms"}: true,
	{"microsoft", "teams"}: true, {"apple", "music"}: true, {"apple", "calendar"}: true,
	{"new", "relic"}: true, {"help", "scout"}: true, {"power", "bi"}: true,
}
