// Package identity owns who may call what: users, workspaces, agents and their memberships,
// executors, the opaque tokens of the two planes (member and executor), authentication of a bearer
// token (with the in-process token cache and its invalidation across instances), the Directory that
// administers all of them with the refusal words (docs/api.md#identity), and the first-start
// bootstrap. It decides; core/store records; core/httpapi only asks it. It must not know HTTP or
// JSON, and it must not reach into work (runs, tasks): what revoking an executor does to work is
// the RevocationEffects hook the executor plane fills.
package identity
