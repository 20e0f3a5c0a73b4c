// One GET with java.net.http.HttpClient, as an agent would write it: no
// proxy or trust set-up in the code (the sandbox's JAVA_TOOL_OPTIONS has
// both). Prints the status and the body; exits 0 on 2xx only.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

public class MatrixClient {
    public static void main(String[] args) throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        HttpRequest req = HttpRequest.newBuilder(URI.create(args[0])).build();
        HttpResponse<String> resp = client.send(req, HttpResponse.BodyHandlers.ofString());
        System.out.println(resp.statusCode() + " " + resp.body());
        System.exit(resp.statusCode() / 100 == 2 ? 0 : 1);
    }
}
