// The UI library in one import: Preact's h and render, its hooks, and htm's tagged
// templates bound to h (no JSX, so no build step).
import { h, render, createContext } from 'preact';
import htm from 'htm';

export { h, render, createContext };
export {
  useState,
  useEffect,
  useRef,
  useCallback,
  useContext,
} from 'preact/hooks';
export const html = htm.bind(h);
