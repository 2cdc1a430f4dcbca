package demomodel

// corpus is the text the demo tokenizer's merges are learned from: plain
// English of the kind a quickstart chat sends, plus a little code and
// numbers. Changing it changes the vocabulary (regenerate models/demo).
const corpus = `
The quick brown fox jumps over the lazy dog. Hello, world! How are you today?
I am fine, thank you. What is the capital of France? The capital of France is Paris.
You are a helpful assistant. Please answer the question below in one short sentence.
Tell me a story about a robot who wanted to learn how to paint the sea at night.
Once upon a time there was a small town by the river, and in that town there lived
a young girl who loved to read books. Every morning she would walk to the library and
ask the old man for a new story. He would smile and say that the best stories are the
ones we write ourselves. She wrote about the stars, the wind, the rain and the sun.
The system is running. The model is loaded and the server is ready to accept requests.
Write a function that returns the sum of two numbers. def add(a, b): return a + b
for i in range(10): print(i) # count from 0 to 9
func main() { fmt.Println("hello") } if err != nil { return err }
The answer is 42. There are 365 days in a year, 24 hours in a day and 60 minutes in an hour.
Can you explain what a large language model does? It predicts the next token, one at a time,
given the text that came before it. The frontend turns your message into tokens with the
tokenizer, the worker generates new tokens, and the frontend turns them back into text.
This is a test. This is only a test. Thank you for your help, and have a nice day!
What time is it? It is ten past three in the afternoon. Where are you going? I am going home.
The weather is nice and the sky is blue. We should go for a walk in the park this evening.
Yes, no, maybe. Please, thanks, sorry. First, second, third. One, two, three, four, five.
`
