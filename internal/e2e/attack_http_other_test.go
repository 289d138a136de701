//go:build !linux

package e2e

import (
	"errors"
	"net/http"
)

var errNoSetfsuid = errors.New("sockets owned by another user need Linux")

func clientAsUser(int) (*http.Client, error) { return nil, errNoSetfsuid }
