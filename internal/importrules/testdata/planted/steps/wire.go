package steps

// Clean: the server's wire formats are neutral ground.
import _ "example.com/planted/mock-server/wire"
