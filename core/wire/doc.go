// Package wire holds the JSON bodies of the wire contract that more than
// one carrier sends: the chat completion and its replay form, the estimate,
// the model list, the receipt, a benchmark launch's acceptance and its
// batch, and the error object. REST sends them as response bodies; the MCP
// tool server sends the same JSON as its forwarding tools' results, so a
// tool answers exactly what its endpoint does. It only renders: every value
// comes from a core service.
package wire
