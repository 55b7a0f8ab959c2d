// Package refusal is the server's door to the one refusal type (sdk/refusal's Refusal, here named
// Error by alias, with its kinds, New, Newf and As) and the home of the words more than one core
// service answers with. Services build refusals without knowing HTTP; core/httpapi maps each Kind
// to a status and writes the body. It defines no refusal type of its own.
package refusal
