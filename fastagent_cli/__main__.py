from fastagent_cli.cli.main import main

main()
