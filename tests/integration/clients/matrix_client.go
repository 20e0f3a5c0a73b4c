// One GET with net/http's default client, as an agent would write it: the
// proxy comes from HTTPS_PROXY and the roots from SSL_CERT_FILE, both set
// by the sandbox. Prints the status and the body; exits 0 on 2xx only.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	if resp.StatusCode/100 != 2 {
		os.Exit(1)
	}
}
