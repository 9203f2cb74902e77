package coturnconf

import (
	"strings"
	"unicode/utf8"
)

// auth converts the realm, static users and TURN REST secrets.
func (c *converter) auth() {
	if o, ok := c.last("realm"); ok {
		c.cfg.Realm, c.why["realm"] = o.Value, src(o)
	} else {
		c.warnAll("realm", Note, "not set: coturn used the machine's domain name; turnd uses %q. The realm changes "+
			"nothing for clients with passwords or TURN REST credentials, who take it from the server", c.cfg.Realm)
	}
	if o, on := c.flag("lt-cred-mech"); on {
		c.note(o, "turnd always uses the long-term credential mechanism; nothing to carry over")
	}
	if o, on := c.flag("no-auth"); on {
		c.warn(o, "turnd always requires credentials: anonymous TURN is not supported")
	}

	secretOpt, secretMode := c.flag("use-auth-secret")
	seen := map[string]bool{}
	for _, o := range c.opts["static-auth-secret"] {
		secretMode = true
		if seen[o.Value] {
			c.note(o, "the same secret is listed already")
			continue
		}
		seen[o.Value] = true
		c.cfg.Auth.Secrets = append(c.cfg.Auth.Secrets, o.Value)
		c.items["auth.secrets"] = append(c.items["auth.secrets"], src(o))
	}
	if secretOpt.Name != "" && secretMode && len(c.opts["static-auth-secret"]) == 0 {
		c.warn(secretOpt, "no static-auth-secret: coturn read the secrets from its database (turn_secret); "+
			"copy them into auth.secrets")
	}
	if o, ok := c.last("rest-api-separator"); ok {
		r, _ := utf8.DecodeRuneInString(o.Value)
		if utf8.RuneCountInString(o.Value) > 1 {
			c.warn(o, "coturn uses only the first character, %q", string(r))
		}
		c.cfg.Auth.RESTSeparator, c.why["auth.rest_separator"] = string(r), src(o)
	}

	for _, o := range c.opts["user"] {
		if secretMode {
			c.warn(o, "not carried over: coturn ignores user= accounts when use-auth-secret or static-auth-secret is set "+
				"(the shared secret replaces them). Add it to auth.users if turnd should accept both")
			continue
		}
		c.user(o)
	}
	if len(c.cfg.Auth.Users) == 0 && len(c.cfg.Auth.Secrets) == 0 {
		c.warnAll("user", Warning, "no credential was carried over (user=name:password, static-auth-secret=): "+
			"turnd needs auth.users or auth.secrets")
	}
}

// user converts "name:password"; a "name:0x<key>" account cannot be
// carried over because turnd stores passwords, not keys.
func (c *converter) user(o Option) {
	name, pass, ok := strings.Cut(o.Value, ":")
	pass = strings.TrimLeft(pass, " \t") // coturn skips blanks after the ':'
	switch {
	case !ok || name == "" || pass == "":
		c.warn(o, `not "name:password"; ignored (coturn: "Wrong user account")`)
		return
	case strings.HasPrefix(pass, "0x"):
		c.warn(o, "user %q is given as a key (0x..., the hex MD5 of %s:realm:password), not a password. turnd stores "+
			"passwords, so this user is not carried over: issue a new password and add it under auth.users", name, name)
		return
	}
	if _, dup := c.cfg.Auth.Users[name]; dup {
		c.warn(o, "user %q is defined again; coturn keeps the last definition, this one", name)
	} else {
		c.userOrder = append(c.userOrder, name)
	}
	c.cfg.Auth.Users[name] = pass
	c.why["auth.users."+name] = src(o)
}
