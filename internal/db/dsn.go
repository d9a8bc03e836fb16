package db

import "net/url"

// WithDatabase returns dsn (a postgres:// URL or a key=value connection
// string) with its database replaced by database.
func WithDatabase(dsn, database string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + database
		u.RawPath = ""
		return u.String()
	}
	return dsn + " dbname=" + quoteKV(database)
}

func quoteKV(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
