// Package identity owns who may call what: users, workspaces, agents and their memberships, the
// opaque tokens of the two planes (member and executor), authentication of a bearer token, and the
// first-start bootstrap. It decides; core/store records; core/httpapi only asks it.
package identity
