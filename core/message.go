package core

// Message is one chat message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ValidRole reports whether r is system, user or assistant.
func ValidRole(r string) bool { return r == RoleSystem || r == RoleUser || r == RoleAssistant }
