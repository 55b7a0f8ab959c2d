// Package refusal is the one typed error every service returns when it refuses a request: a
// stable word (the code clients read), a sentence for people, the kind of refusal, and the extra
// keys a door defines (path, word, field, name, …) in the order they are added. Services build
// refusals without knowing HTTP; core/httpapi maps each Kind to a status and writes the body.
package refusal
