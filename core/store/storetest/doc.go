// Package storetest gives tests a fresh, migrated store of each dialect: SQLite always, and
// PostgreSQL when NEXUS_TEST_POSTGRES_URL names a database the tests may create schemas in. Each
// PostgreSQL store lives in its own schema, dropped when the test ends, so parallel tests and
// repeated runs never see each other's rows.
package storetest
