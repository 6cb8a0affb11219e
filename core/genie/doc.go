// Package genie is the mode assistant's core: what it may say about a
// mode's runs and how it is kept honest. Its facts are taken from the
// stored batches, never from a model (facts.go): each run's figures, and
// the figures computed from them, such as how many more questions would
// narrow an interval to a width. Every numeral an answer states must be one
// of its facts (the invented-figure guard, guard.go). The assistant runs on
// the service's own staff engines and is never billed to the caller.
package genie
