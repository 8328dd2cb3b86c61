// examples holds no Go: the TypeScript and Python examples, whose npm
// installs (node_modules) carry Go sources of their own. This file makes
// examples a module apart, so that the go tool's ./... (make test, go vet)
// does not walk into them.
module github.com/a2adelegate/delegate/examples

go 1.26
